"""TypeScript stub generation: a golden file, the details that matter, and `deno check`.

The golden file tests/golden/stubs/stubs.ts holds the stubs of `DEFINITIONS`.
After an intended change to the generator, rewrite it with

    TOOLWIRE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/core/test_stubs.py

and review the diff. The Deno tests type-check the generated module (and code
that uses it) with the `deno` binary from the `deno` Python package, offline:
`--no-remote`, `--no-config`, a temporary DENO_DIR.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import deno  # type: ignore[import-untyped]
import pytest
from toolwire.models import ParameterType, ToolDefinition, ToolParameter
from toolwire.schema import normalize_definition
from toolwire.stubs import generate_stubs

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "stubs" / "stubs.ts"

_TREE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "root": {"$ref": "#/$defs/node", "description": "The top of the tree."},
        "labels": {"$ref": "#/definitions/Labels"},
        "loop": {"$ref": "#/$defs/loop", "description": "A definition that is only itself."},
    },
    "required": ["root"],
    "additionalProperties": False,
    "$defs": {
        "node": {
            "description": "One node: a value and its children.",
            "type": "object",
            "properties": {
                "value": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
        },
        "loop": {"anyOf": [{"$ref": "#/$defs/loop"}, {"type": "string"}]},
        "unused": {"type": "string"},
    },
    "definitions": {
        "Labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _definitions() -> list[ToolDefinition]:
    raw = [
        ToolDefinition(
            name="memory_read",
            description="Search memory by relevance.\n\nReturns the best blocks first.",
            parameters=(
                ToolParameter(
                    name="query",
                    type=ParameterType.STRING,
                    description="The search query.",
                    required=True,
                ),
                ToolParameter(
                    name="limit",
                    type=ParameterType.INTEGER,
                    description="How many blocks to return.",
                    json_schema={"default": 5, "minimum": 1},
                ),
                ToolParameter(
                    name="tier",
                    type=ParameterType.STRING,
                    enum_values=("core", "working", "archival"),
                ),
            ),
        ),
        ToolDefinition(
            name="create_contact",
            description="Create a contact.",
            input_schema={
                "type": "object",
                "properties": {
                    "display name": {"type": "string", "description": "Shown in lists."},
                    "address": {
                        "type": "object",
                        "description": "Where they live.",
                        "properties": {
                            "street": {"type": "string", "description": "Street and number."},
                            "city": {"type": "string"},
                            "country": {"enum": ["CH", "DE", "FR"]},
                        },
                        "required": ["street", "city"],
                    },
                    "emails": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "address": {"type": "string"},
                                "primary": {"type": "boolean"},
                            },
                            "required": ["address"],
                        },
                    },
                    "tags": {"type": "array", "items": {"type": ["string", "integer"]}},
                    "location": {
                        "type": "array",
                        "prefixItems": [{"type": "number"}, {"type": "number"}],
                        "description": "Latitude and longitude.",
                    },
                    "notes": {"type": ["string", "null"]},
                    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                    "extra": {"type": "object"},
                    "priority": {"enum": [1, "two", True, None]},
                    "kind": {"const": "person"},
                    "contact": {
                        "oneOf": [
                            {"type": "object", "properties": {"phone": {"type": "string"}}},
                            {"type": "object", "properties": {"email": {"type": "string"}}},
                        ]
                    },
                    "audit": {
                        "allOf": [
                            {"type": "object", "properties": {"by": {"type": "string"}}},
                            {"type": "object", "properties": {"at": {"type": "number"}}},
                        ]
                    },
                    "anything": {},
                },
                "required": ["display name", "address"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="build_tree",
            description="Store a tree of labelled values.",
            input_schema=_TREE_SCHEMA,
        ),
        ToolDefinition(
            name="send-email",
            description="Send an email.",
            parameters=(
                ToolParameter(name="to", type=ParameterType.STRING, required=True),
                ToolParameter(name="subject", type=ParameterType.STRING, required=True),
            ),
        ),
        ToolDefinition(
            name="2fa_check",
            description="Check a one-time code.",
            parameters=(ToolParameter(name="code", type=ParameterType.STRING, required=True),),
        ),
        ToolDefinition(
            name="delete",
            description="Delete a record.",
            parameters=(ToolParameter(name="id", type=ParameterType.STRING, required=True),),
        ),
        ToolDefinition(
            name="get_user",
            description="Get a user by id.",
            parameters=(ToolParameter(name="id", type=ParameterType.STRING, required=True),),
        ),
        ToolDefinition(
            name="get-user",
            description="Get a user by e-mail.",
            parameters=(ToolParameter(name="email", type=ParameterType.STRING, required=True),),
        ),
        ToolDefinition(
            name="describe",
            description=(
                "Résumé of a café — 日本語 ✓.\n"
                "A comment ends with */ in C; this one must not. /* nested? */\n"
                "Line\u2028separator and paragraph\u2029separator."
            ),
            parameters=(
                ToolParameter(
                    name="text",
                    type=ParameterType.STRING,
                    required=True,
                    description="Anything */ at all",
                ),
            ),
        ),
        ToolDefinition(name="list_tools", description="List the registered tools."),
        ToolDefinition(
            name="get_weather",
            description="Current weather for a city.",
            parameters=(ToolParameter(name="city", type=ParameterType.STRING, required=True),),
            output_schema={
                "type": "object",
                "description": "Conditions now.",
                "properties": {
                    "temperature_c": {"type": "number", "description": "Degrees Celsius."},
                    "conditions": {"enum": ["sunny", "cloudy", "rain"]},
                },
                "required": ["temperature_c", "conditions"],
            },
        ),
    ]
    return [normalize_definition(d) for d in raw]


DEFINITIONS = _definitions()


def _one(**schema: Any) -> ToolDefinition:
    """A tool `t` with this input schema, as given (stubs must cope with any schema)."""
    return ToolDefinition(name="t", input_schema={"type": "object", **schema})


# --- golden and specifics ----------------------------------------------------------


def test_golden() -> None:
    stubs = generate_stubs(DEFINITIONS)
    if os.environ.get("TOOLWIRE_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(stubs, encoding="utf-8")
    assert stubs == GOLDEN.read_text(encoding="utf-8"), (
        "stubs differ from the golden file; if intended, rerun with TOOLWIRE_UPDATE_GOLDEN=1"
    )


def test_header_and_trailing_newline() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert stubs.startswith(
        "// Generated by toolwire from the registry's tool definitions. Do not edit.\n"
        "declare function __callTool__(name: string, params: Record<string, unknown>)"
        ": Promise<unknown>;\n"
    )
    assert stubs.endswith("}\n")
    assert not stubs.endswith("\n\n")
    assert generate_stubs([]).endswith("Promise<unknown>;\n")


def test_deterministic_for_any_input_order() -> None:
    expected = generate_stubs(DEFINITIONS)
    rng = random.Random(7)
    for _ in range(10):
        shuffled = list(DEFINITIONS)
        rng.shuffle(shuffled)
        assert generate_stubs(shuffled) == expected


def test_tools_sorted_by_name() -> None:
    stubs = generate_stubs(DEFINITIONS)
    called = re.findall(r'__callTool__\("([^"]+)"', stubs)
    assert called == sorted(d.name for d in DEFINITIONS)


def test_memory_read_shape() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert (
        "/** Parameters of `memory_read`. */\n"
        "export interface MemoryReadParams {\n"
        "  /** The search query. */\n"
        "  query: string;\n"
        "  /**\n"
        "   * How many blocks to return.\n"
        "   *\n"
        "   * @default 5\n"
        "   */\n"
        "  limit?: number;\n"
        '  tier?: "core" | "working" | "archival";\n'
        "}\n"
    ) in stubs
    assert (
        "/**\n"
        " * Search memory by relevance.\n"
        " *\n"
        " * Returns the best blocks first.\n"
        " */\n"
        "export async function memory_read(params: MemoryReadParams): Promise<unknown> {\n"
        '  return await __callTool__("memory_read", '
        "params as unknown as Record<string, unknown>);\n"
        "}\n"
    ) in stubs


def test_no_parameters_means_callable_without_argument() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert (
        "export async function list_tools(params: Record<string, never> = {}): Promise<unknown>"
        in stubs
    )
    assert "ListToolsParams" not in stubs


def test_all_optional_parameters_default_to_empty_object() -> None:
    stubs = generate_stubs([_one(properties={"a": {"type": "string"}})])
    assert "export async function t(params: TParams = {}): Promise<unknown>" in stubs


def test_identifiers_from_awkward_names() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert "export async function send_email(params: SendEmailParams)" in stubs
    assert '__callTool__("send-email",' in stubs
    assert "export async function _2fa_check(params: _2faCheckParams)" in stubs
    assert "export async function delete_(params: DeleteParams)" in stubs
    # The name that already is an identifier keeps it; the other yields.
    assert "export async function get_user(params: GetUserParams)" in stubs
    assert "export async function get_user_2(params: GetUser_2Params)" in stubs
    assert re.search(r'get_user_2\(.*\n  return await __callTool__\("get-user",', stubs)
    assert "Calls the tool `get-user`." in stubs


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("class", "class_"),
        ("new", "new_"),
        ("in", "in_"),
        ("default", "default_"),
        ("function", "function_"),
        ("__callTool__", "__callTool___"),
        ("Promise", "Promise_"),
        ("9", "_9"),
        ("a-b-c", "a_b_c"),
    ],
)
def test_reserved_and_invalid_names(name: str, function: str) -> None:
    definition = normalize_definition(ToolDefinition(name=name))
    assert f"export async function {function}(" in generate_stubs([definition])


def test_colliding_names_get_numbered_suffixes() -> None:
    names = ["a-b", "a_b", "a_b_2", "a.b"]  # "a.b" is not a registry name; stubs cope anyway
    stubs = generate_stubs([ToolDefinition(name=n, input_schema={"type": "object"}) for n in names])
    functions = re.findall(r"export async function (\w+)\(", stubs)
    assert functions == ["a_b_3", "a_b_4", "a_b", "a_b_2"]  # in tool-name order: a-b a.b a_b a_b_2
    assert len(set(functions)) == len(names)


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        generate_stubs([DEFINITIONS[0], DEFINITIONS[0]])


def test_doc_comments_cannot_be_closed_early() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert "ends with *\\/ in C" in stubs
    assert "/* nested? *\\/" in stubs
    assert "/** Anything *\\/ at all */" in stubs
    assert "Résumé of a café — 日本語 ✓." in stubs
    assert "\u2028" not in stubs
    assert "\u2029" not in stubs
    assert " * Line\n * separator and paragraph\n * separator.\n" in stubs
    # Every comment opened is closed exactly where the generator closed it.
    for comment in re.findall(r"/\*.*?\*/", stubs, flags=re.DOTALL):
        assert comment.endswith(" */")


def test_unicode_and_separators_in_string_literals_are_escaped() -> None:
    stubs = generate_stubs(
        [_one(properties={"x": {"enum": ["a\u2028b", 'q"uote', "é", "\ud800"]}, "y z": {}})]
    )
    assert 'x?: "a\\u2028b" | "q\\"uote" | "é" | "\\ud800";' in stubs
    assert '"y z"?: unknown;' in stubs
    stubs.encode("utf-8")  # no lone surrogate made it through


def test_property_names_that_are_not_identifiers_are_quoted() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert '  /** Shown in lists. */\n  "display name": string;\n' in stubs


SCHEMA_FORMS: list[tuple[dict[str, Any], str]] = [
    ({"type": "string"}, "string"),
    ({"type": "integer"}, "number"),
    ({"type": "null"}, "null"),
    ({"type": ["string", "null"]}, "string | null"),
    ({"type": ["integer", "number"]}, "number"),
    ({"enum": ["a", 1, False, None]}, '"a" | 1 | false | null'),
    ({"enum": []}, "never"),
    ({"const": {"k": [1, -2.5]}}, "{ k: [1, -2.5] }"),
    ({"const": -1}, "-1"),
    ({"type": "array", "items": {"const": -1}}, "(-1)[]"),
    ({"type": "array"}, "unknown[]"),
    ({"type": "array", "items": {"enum": ["a", "b"]}}, '("a" | "b")[]'),
    ({"prefixItems": [{"type": "string"}, {"type": "number"}]}, "[string, number]"),
    (
        {"prefixItems": [{"type": "string"}, {"type": ["number", "null"]}], "minItems": 1},
        "[string, (number | null)?]",
    ),
    (
        {"prefixItems": [{"type": "string"}], "items": {"type": "boolean"}},
        "[string, ...boolean[]]",
    ),
    ({"items": [{"type": "string"}], "additionalItems": False}, "[string]"),
    ({"type": "object"}, "Record<string, unknown>"),
    ({"type": "object", "additionalProperties": False}, "Record<string, never>"),
    (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        "Record<string, number>",
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "integer"},
        },
        "{ a?: string; [key: string]: number | string | undefined }",
    ),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]},
        "{ a: string; b: unknown }",
    ),
    ({"anyOf": [{"type": "string"}, {"type": "number"}]}, "string | number"),
    ({"anyOf": [{"type": "string"}, {}]}, "unknown"),
    (
        {
            "allOf": [
                {"anyOf": [{"type": "string"}, {"type": "number"}]},
                {"type": "object", "properties": {"a": {"type": "string"}}},
            ]
        },
        "(string | number) & { a?: string }",
    ),
    ({"type": "string", "nullable": True}, "string | null"),
    ({"not": {"type": "string"}}, "unknown"),
    ({"$ref": "https://example.com/schema.json"}, "unknown"),
    ({"type": "integer", "const": 3.0}, "3"),
    ({"enum": [0.5, 1e300, -0.0]}, "0.5 | 1e+300 | 0"),
]


@pytest.mark.parametrize(("schema", "expected"), SCHEMA_FORMS)
def test_schema_to_type(schema: dict[str, Any], expected: str) -> None:
    stubs = generate_stubs([_one(properties={"p": schema}, required=["p"])])
    assert f"  p: {expected};\n" in stubs


def test_refs_become_prefixed_aliases_and_recursion_is_kept() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert "  root: BuildTreeNode;\n" in stubs
    assert (
        "/** One node: a value and its children. */\n"
        "export type BuildTreeNode = { value: string; children?: BuildTreeNode[] };\n"
    ) in stubs
    assert "export type BuildTreeLabels = Record<string, string>;" in stubs
    assert "BuildTreeUnused" not in stubs  # only referenced definitions are emitted
    # A definition that is a union with itself cannot be said in TypeScript.
    assert "export type BuildTreeLoop = string;" in stubs


def test_ref_to_the_root_and_clashing_alias_names() -> None:
    definition = normalize_definition(
        ToolDefinition(
            name="t",
            input_schema={
                "type": "object",
                "properties": {
                    "self": {"$ref": "#"},
                    "p": {"$ref": "#/$defs/params"},
                    "q": {"$ref": "#/$defs/a~1b"},
                },
                "$defs": {"params": {"type": "string"}, "a/b": {"type": "number"}},
            },
        )
    )
    stubs = generate_stubs([definition])
    assert "  self?: TParams;\n" in stubs
    assert "  p?: TParams_2;\n" in stubs
    assert "export type TParams_2 = string;" in stubs
    assert "export type TAB = number;" in stubs


def _cyclic_definition() -> ToolDefinition:
    return _one(
        properties={"x": {"$ref": "#/$defs/a"}, "m": {"$ref": "#/$defs/map"}},
        **{
            "$defs": {
                "a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "string"}]},
                "b": {"allOf": [{"$ref": "#/$defs/a"}, {"type": "object"}]},
                "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/map"}},
            }
        },
    )


_JSON_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": ["string", "number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/$defs/json"}},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}},
    ]
}


def test_mutually_recursive_unions_fall_back_to_unknown_at_the_cycle() -> None:
    stubs = generate_stubs([_cyclic_definition()])
    assert "export type TMap = { [key: string]: TMap };" in stubs
    # a = b | string, b = a & object: both references lie on the cycle and are cut,
    # which leaves a = string (the only finite values) and b unreferenced.
    assert "export type TA = string;" in stubs
    assert "TB" not in stubs


def test_output_schema_types_the_result() -> None:
    stubs = generate_stubs(DEFINITIONS)
    assert (
        "/**\n"
        " * Result of `get_weather`.\n"
        " *\n"
        " * Conditions now.\n"
        " */\n"
        "export type GetWeatherResult = {\n"
        "  /** Degrees Celsius. */\n"
        "  temperature_c: number;\n"
        '  conditions: "sunny" | "cloudy" | "rain";\n'
        "};\n"
    ) in stubs
    assert (
        "export async function get_weather(params: GetWeatherParams): Promise<GetWeatherResult> {\n"
        '  const result = await __callTool__("get_weather", '
        "params as unknown as Record<string, unknown>);\n"
        "  return result as GetWeatherResult;\n"
        "}\n"
    ) in stubs


def test_unnormalized_definition_uses_its_parameters() -> None:
    definition = ToolDefinition(
        name="t", parameters=(ToolParameter(name="a", type=ParameterType.STRING, required=True),)
    )
    assert "  a: string;\n" in generate_stubs([definition])


# --- Deno: the types are real TypeScript and they have teeth ------------------------

USAGE_OK = """\
import {
  _2fa_check,
  build_tree,
  create_contact,
  delete_,
  describe,
  get_user,
  get_user_2,
  get_weather,
  list_tools,
  memory_read,
  send_email,
  type BuildTreeNode,
  type GetWeatherResult,
  type MemoryReadParams,
} from "./stubs.ts";

export async function main(): Promise<void> {
  await memory_read({ query: "deno", limit: 3, tier: "core" });
  const params: MemoryReadParams = { query: "only the required field" };
  await memory_read(params);
  await create_contact({
    "display name": "Ada",
    address: { street: "1 Loop Rd", city: "Zürich", country: "CH" },
    emails: [{ address: "ada@example.com", primary: true }, { address: "a@b.c" }],
    tags: ["vip", 7],
    location: [47.37, 8.54],
    notes: null,
    metadata: { source: "import" },
    extra: { anything: [1, 2, 3] },
    priority: "two",
    kind: "person",
    contact: { phone: "+41" },
    audit: { by: "me", at: 1 },
    anything: Symbol("x"),
  });
  const tree: BuildTreeNode = { value: "a", children: [{ value: "b", children: [] }] };
  await build_tree({ root: tree, labels: { a: "first" }, loop: "x" });
  await send_email({ to: "a@b.c", subject: "hi" });
  await _2fa_check({ code: "123456" });
  await delete_({ id: "r1" });
  await get_user({ id: "u1" });
  await get_user_2({ email: "a@b.c" });
  await describe({ text: "x" });
  await list_tools();
  await list_tools({});
  const weather: GetWeatherResult = await get_weather({ city: "Bern" });
  const degrees: number = weather.temperature_c;
  const sky: "sunny" | "cloudy" | "rain" = weather.conditions;
  console.log(degrees.toFixed(1), sky);
}
"""

# Each must fail `deno check` with a diagnostic that names the problem.
USAGE_BAD = {
    "wrong_enum": (
        'import { memory_read } from "./stubs.ts";\n'
        'await memory_read({ query: "q", tier: "hot" });\n',
        r'"hot".*not assignable to type .*"core" \| "working" \| "archival"',
    ),
    "missing_required": (
        'import { memory_read } from "./stubs.ts";\nawait memory_read({ limit: 3 });\n',
        r"Property 'query' is missing",
    ),
    "misspelled_optional": (
        'import { memory_read } from "./stubs.ts";\nawait memory_read({ query: "q", limti: 3 });\n',
        r"'limti' does not exist in type 'MemoryReadParams'",
    ),
    "wrong_nested_type": (
        'import { build_tree } from "./stubs.ts";\n'
        'await build_tree({ root: { value: "a", children: [{ value: 1 }] } });\n',
        r"Type 'number' is not assignable to type 'string'",
    ),
    "wrong_result_use": (
        'import { get_weather } from "./stubs.ts";\n'
        'const w = await get_weather({ city: "Bern" });\n'
        "const s: string = w.temperature_c;\n",
        r"Type 'number' is not assignable to type 'string'",
    ),
    "argument_to_parameterless_tool": (
        'import { list_tools } from "./stubs.ts";\nawait list_tools({ verbose: true });\n',
        r"not assignable to type 'never'",
    ),
}


def _forms_definitions() -> list[ToolDefinition]:
    """Every form of the schema table, and the cyclic definitions, as tools."""
    forms = ToolDefinition(
        name="forms",
        input_schema={
            "type": "object",
            "properties": {f"p{i}": schema for i, (schema, _) in enumerate(SCHEMA_FORMS)},
            "required": [f"p{i}" for i in range(0, len(SCHEMA_FORMS), 2)],
        },
        output_schema={"$ref": "#/$defs/json", "$defs": {"json": _JSON_VALUE}},
    )
    return [forms, _cyclic_definition(), *DEFINITIONS]


@pytest.fixture(scope="module")
def deno_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("stubs")
    (workdir / "stubs.ts").write_text(generate_stubs(DEFINITIONS), encoding="utf-8")
    (workdir / "forms.ts").write_text(generate_stubs(_forms_definitions()), encoding="utf-8")
    (workdir / "usage_ok.ts").write_text(USAGE_OK, encoding="utf-8")
    for case, (source, _) in USAGE_BAD.items():
        (workdir / f"bad_{case}.ts").write_text(source, encoding="utf-8")
    return workdir


def _deno(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DENO_NO_UPDATE_CHECK": "1",
        "DENO_DIR": str(workdir / ".deno"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [deno.find_deno_bin(), *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_generated_stubs_and_typed_usage_pass_deno_check(deno_dir: Path) -> None:
    result = _deno(
        deno_dir, "check", "--no-remote", "--no-config", "stubs.ts", "forms.ts", "usage_ok.ts"
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def bad_diagnostics(deno_dir: Path) -> dict[str, list[str]]:
    """`deno check` over every bad usage file at once: its diagnostics per file."""
    files = [f"bad_{case}.ts" for case in sorted(USAGE_BAD)]
    result = _deno(deno_dir, "check", "--no-remote", "--no-config", *files)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    found: dict[str, list[str]] = {}
    # Each diagnostic: "TSnnnn [ERROR]: message … at file:///…/bad_x.ts:line:col".
    for message, file in re.findall(
        r"(TS\d+ \[ERROR\]: .*?)\n\s+at file://\S*/(bad_\w+\.ts):", output, flags=re.DOTALL
    ):
        found.setdefault(file, []).append(message)
    return found


@pytest.mark.parametrize("case", sorted(USAGE_BAD))
def test_wrongly_typed_usage_fails_deno_check(
    bad_diagnostics: dict[str, list[str]], case: str
) -> None:
    diagnostics = bad_diagnostics.get(f"bad_{case}.ts", [])
    assert diagnostics, f"bad_{case}.ts type-checked cleanly: {bad_diagnostics}"
    pattern = USAGE_BAD[case][1]
    assert any(re.search(pattern, d, flags=re.DOTALL) for d in diagnostics), diagnostics


def test_stubs_call_the_real_tool_names_at_run_time(deno_dir: Path) -> None:
    (deno_dir / "run.ts").write_text(
        """\
const calls: unknown[] = [];
(globalThis as Record<string, unknown>).__callTool__ = (name: string, params: unknown) => {
  calls.push([name, params]);
  return Promise.resolve({ temperature_c: 21.5, conditions: "sunny" });
};
const stubs = await import("./stubs.ts");
await stubs.get_user_2({ email: "a@b.c" });
await stubs.delete_({ id: "r1" });
await stubs._2fa_check({ code: "1" });
await stubs.list_tools();
const weather = await stubs.get_weather({ city: "Bern" });
console.log(JSON.stringify({ calls, weather }));
""",
        encoding="utf-8",
    )
    result = _deno(deno_dir, "run", "--no-remote", "--no-config", "--no-prompt", "run.ts")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == {
        "calls": [
            ["get-user", {"email": "a@b.c"}],
            ["delete", {"id": "r1"}],
            ["2fa_check", {"code": "1"}],
            ["list_tools", {}],
            ["get_weather", {"city": "Bern"}],
        ],
        "weather": {"temperature_c": 21.5, "conditions": "sunny"},
    }
