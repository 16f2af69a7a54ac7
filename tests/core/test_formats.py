"""Model formats: golden files per format, and the rules every conversion keeps.

The golden files tests/golden/formats/<format>.json hold what `to_model_tools`
makes of DEFINITIONS (tools and diagnostics). After an intended change,
rewrite them with

    TOOLWIRE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/core/test_formats.py

and review the diff like code. The other tests check properties rather than
bytes: strict OpenAI schemas obey strict mode's rules, Gemini output stays in
Gemini's subset, and no conversion touches the definitions it was given.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolwire.formats import Diagnostic, ModelTools, to_model_tools
from toolwire.models import ModelFormat, ParameterType, SafetyTier, ToolDefinition, ToolParameter
from toolwire.schema import normalize_definition

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "formats"
UPDATE_GOLDEN = os.environ.get("TOOLWIRE_UPDATE_GOLDEN") == "1"

NAME_OF_64 = "fetch_customer_invoices_grouped_by_billing_period_and_currency_2"

NODE_DEFS = {
    "Node": {
        "type": "object",
        "description": "One node of a tree.",
        "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["label"],
    }
}


def _define(**fields: Any) -> ToolDefinition:
    return normalize_definition(ToolDefinition(**fields))


DEFINITIONS = [
    _define(
        name="get_weather",
        description="Current weather for a city.",
        safety_tier=SafetyTier.READ_ONLY,
        labels={"title": "Weather", "open_world": "true"},
        parameters=(
            ToolParameter(
                name="location", type=ParameterType.STRING, required=True, description="City"
            ),
            ToolParameter(
                name="unit",
                type=ParameterType.STRING,
                enum_values=("celsius", "fahrenheit"),
                json_schema={"default": "celsius"},
            ),
            ToolParameter(
                name="days", type=ParameterType.INTEGER, json_schema={"minimum": 1, "maximum": 14}
            ),
        ),
    ),
    _define(
        name="create_event",
        description="Put an event in the shared calendar.",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "start": {"type": "string", "format": "date-time"},
                "organizer": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "email": {"type": "string", "format": "email"},
                    },
                    "required": ["email"],
                },
                "attendees": {
                    "type": "array",
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "email": {"type": "string", "format": "email"},
                            "role": {"type": "string", "enum": ["required", "optional"]},
                        },
                        "required": ["email"],
                        "additionalProperties": False,
                    },
                },
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "link": {"type": "string", "format": "uri"},
                "priority": {"enum": [1, 2, 3], "description": "1 is the highest."},
            },
            "required": ["title", "start"],
            "additionalProperties": False,
        },
    ),
    _define(
        name="edit_tree",
        description="Replace a subtree.",
        input_schema={
            "type": "object",
            "$defs": NODE_DEFS,
            "properties": {
                "root": {"$ref": "#/$defs/Node", "description": "The new subtree."},
                "parent": {"$ref": "#/$defs/Node"},
            },
            "required": ["root"],
            "additionalProperties": False,
        },
    ),
    _define(
        name="set_labels",
        description="Attach labels to a resource.",
        input_schema={
            "type": "object",
            "properties": {
                "resource": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["resource", "labels"],
            "additionalProperties": False,
        },
        output_schema={"type": "object", "properties": {"count": {"type": "integer"}}},
    ),
    _define(
        name="translate_text",
        description="Übersetzt Text ins Japanische (日本語) ✓ — a doc comment ends with */ here.",
        parameters=(
            ToolParameter(
                name="text",
                type=ParameterType.STRING,
                required=True,
                description="Text; may hold */ or /* and “quotes”.",
            ),
            ToolParameter(name="target", type=ParameterType.STRING, enum_values=("ja", "de", "fr")),
        ),
        output_schema={"type": "string"},
    ),
    _define(
        name=NAME_OF_64,
        description="A name of exactly 64 characters, the longest any API accepts.",
        parameters=(ToolParameter(name="customer_id", type=ParameterType.STRING, required=True),),
    ),
    _define(
        name="3d_render",
        description="Starts with a digit, which Gemini refuses.",
        parameters=(ToolParameter(name="scene", type=ParameterType.STRING, required=True),),
    ),
    _define(
        name="purge_cache",
        description="Drop every cached page.",
        safety_tier=SafetyTier.PRIVILEGED,
    ),
    _define(
        name="search_docs",
        input_schema={
            "type": "object",
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {
                        "lang": {"type": "string"},
                        "since": {"type": "string", "format": "date"},
                    },
                }
            },
            "properties": {
                "query": {"type": "string", "examples": ["grpc deadline"]},
                "filters": {
                    "allOf": [{"$ref": "#/$defs/Filter"}],
                    "description": "Narrow the search.",
                },
                "mode": {"const": "fast"},
                "cursor": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9=]+$"},
                "limit": {"oneOf": [{"type": "integer"}, {"type": "string", "enum": ["all"]}]},
            },
            "required": ["query"],
        },
    ),
]


def _serialize(result: ModelTools) -> str:
    document = {
        "tools": result.tools,
        "diagnostics": [d.model_dump() for d in result.diagnostics],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


@pytest.mark.parametrize("fmt", list(ModelFormat))
def test_golden(fmt: ModelFormat) -> None:
    golden = GOLDEN_DIR / f"{fmt.value}.json"
    text = _serialize(to_model_tools(DEFINITIONS, fmt))
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing; run with TOOLWIRE_UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), (
        f"{fmt.value} output differs from {golden}; if intended, rerun with "
        "TOOLWIRE_UPDATE_GOLDEN=1 and review the diff"
    )


# --- strict mode -------------------------------------------------------------

STRICT_FORMATS = {"date-time", "time", "date", "duration", "email"}
STRICT_FORMATS |= {"hostname", "ipv4", "ipv6", "uuid"}
NOT_IN_STRICT_MODE = {
    "allOf", "not", "if", "then", "else", "oneOf", "const", "default", "patternProperties",
    "dependentRequired", "dependentSchemas", "unevaluatedProperties", "prefixItems",
    "minLength", "maxLength", "uniqueItems", "examples",
}  # fmt: skip


def _subschemas(node: Any, path: str = "", depth: int = 1) -> Iterator[tuple[str, Any, int]]:
    """Every schema inside `node` with its pointer and nesting level (objects
    and arrays each add one), following the keywords that hold schemas."""
    yield path, node, depth
    if not isinstance(node, dict):
        return
    for name, child in (node.get("properties") or {}).items():
        yield from _subschemas(child, f"{path}/properties/{name}", depth + 1)
    if isinstance(node.get("items"), dict):
        yield from _subschemas(node["items"], f"{path}/items", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for i, child in enumerate(node.get(key) or ()):
            yield from _subschemas(child, f"{path}/{key}/{i}", depth)
    for key in ("$defs", "definitions"):
        for name, child in (node.get(key) or {}).items():
            yield from _subschemas(child, f"{path}/{key}/{name}", 1)


def _types(node: dict[str, Any]) -> list[Any]:
    declared = node.get("type")
    return declared if isinstance(declared, list) else [declared]


def assert_strict_compatible(schema: dict[str, Any]) -> None:
    assert schema["type"] == "object"
    for path, node, depth in _subschemas(schema):
        assert isinstance(node, dict), path
        if "object" in _types(node) or "array" in _types(node):
            assert depth <= 10, path
        assert not NOT_IN_STRICT_MODE & node.keys(), (path, NOT_IN_STRICT_MODE & node.keys())
        assert "type" in node or "anyOf" in node or "$ref" in node, path
        if "$ref" in node:
            assert node.keys() == {"$ref"}, path
        if "format" in node:
            assert node["format"] in STRICT_FORMATS, path
        if "object" in _types(node) or "properties" in node:
            assert node.get("additionalProperties") is False, path
            assert node.get("required") == list(node.get("properties", {})), path
    jsonschema_rs.meta.validate(schema)


def _accepts(schema: dict[str, Any], subschema: Any, instance: Any) -> bool:
    """Whether `subschema`, a part of `schema`, accepts `instance`; the root's
    definitions come along so that references resolve."""
    if isinstance(subschema, bool):
        return subschema
    document = {**subschema}
    for key in ("$defs", "definitions"):
        if key in schema:
            document[key] = schema[key]
    return bool(jsonschema_rs.validator_for(document).is_valid(instance))


def check_openai(
    definition: ToolDefinition, function: dict[str, Any], found: list[Diagnostic]
) -> None:
    original = definition.input_schema
    assert original is not None
    parameters = function["parameters"]
    if function["strict"]:
        assert_strict_compatible(parameters)
        assert set(parameters["required"]) == set(original.get("properties", {}))
        optional = set(original.get("properties", {})) - set(original.get("required", []))
        for name in optional:
            assert _accepts(parameters, parameters["properties"][name], None), name
    else:
        assert parameters == original
        assert any("strict mode not possible" in d.message for d in found), found


@pytest.mark.parametrize("fmt", [ModelFormat.OPENAI_CHAT, ModelFormat.OPENAI_RESPONSES])
def test_openai_tools_are_strict_compatible_or_unchanged(fmt: ModelFormat) -> None:
    result = to_model_tools(DEFINITIONS, fmt)
    assert len(result.tools) == len(DEFINITIONS)
    for definition, tool in zip(DEFINITIONS, result.tools, strict=True):
        function = tool["function"] if fmt is ModelFormat.OPENAI_CHAT else tool
        assert tool["type"] == "function"
        assert function["name"] == definition.name
        found = [d for d in result.diagnostics if d.tool_name == definition.name]
        check_openai(definition, function, found)
    strict = {
        (tool["function"] if fmt is ModelFormat.OPENAI_CHAT else tool)["name"]: (
            tool["function"] if fmt is ModelFormat.OPENAI_CHAT else tool
        )["strict"]
        for tool in result.tools
    }
    assert [name for name, on in strict.items() if not on] == ["set_labels"]


def _openai_function(schema: dict[str, Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    definition = _define(name="t", input_schema=schema)
    result = to_model_tools([definition], ModelFormat.OPENAI_RESPONSES)
    return result.tools[0], result.diagnostics


def _nest(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


_P = "/properties/p"
_OBJECT_WITH_A = {"type": "object", "properties": {"a": {}}}


@pytest.mark.parametrize(
    ("prop", "path"),
    [
        ({"additionalProperties": {"type": "integer"}}, f"{_P}/additionalProperties"),
        ({"type": "object", "additionalProperties": True}, f"{_P}/additionalProperties"),
        ({"type": "object"}, _P),
        ({"type": "object", "patternProperties": {"^x": {}}}, f"{_P}/patternProperties"),
        ({"not": {"type": "string"}}, f"{_P}/not"),
        ({"if": {"type": "string"}, "then": {"minLength": 1}}, f"{_P}/if"),
        ({"allOf": [{"type": "string"}, {"maxLength": 9}]}, f"{_P}/allOf"),
        ({**_OBJECT_WITH_A, "dependentRequired": {"a": ["b"]}}, f"{_P}/dependentRequired"),
        ({**_OBJECT_WITH_A, "unevaluatedProperties": False}, f"{_P}/unevaluatedProperties"),
        ({"type": "array", "prefixItems": [{"type": "string"}]}, f"{_P}/prefixItems"),
        ({}, _P),
        (_nest(10), _P + "/properties/x" * 9),
    ],
)  # fmt: skip
def test_openai_falls_back_to_non_strict(prop: dict[str, Any], path: str) -> None:
    schema = {"type": "object", "properties": {"p": prop}, "required": ["p"]}
    function, found = _openai_function(schema)
    assert function["strict"] is False
    assert function["parameters"] == schema
    assert any(d.path == path and "strict mode not possible" in d.message for d in found), found


def test_openai_objects_ten_levels_deep_are_still_strict() -> None:
    function, _ = _openai_function(_nest(10))
    assert function["strict"] is True


def test_openai_property_limit() -> None:
    many = {f"p{i}": {"type": "integer"} for i in range(5001)}
    function, found = _openai_function({"type": "object", "properties": many})
    assert function["strict"] is False
    assert any("5001 properties" in d.message for d in found)


def test_openai_strict_rewrite_details() -> None:
    function, found = _openai_function(
        {
            "type": "object",
            "properties": {
                "s": {"type": "string", "default": "x", "format": "uri"},
                "e": {"type": "string", "enum": ["a", "b"]},
                "r": {"$ref": "#/$defs/D", "description": "a D"},
                "c": {"const": 3},
            },
            "$defs": {"D": {"type": "object", "properties": {"k": {"type": "boolean"}}}},
        }
    )
    assert function["strict"] is True
    props = function["parameters"]["properties"]
    assert props["s"] == {"type": ["string", "null"]}
    assert props["e"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["r"] == {"description": "a D", "anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]}
    assert props["c"] == {"enum": [3, None], "type": ["integer", "null"]}
    assert function["parameters"]["$defs"]["D"]["required"] == ["k"]
    assert [d.path for d in found] == ["/properties/s/format"]


# --- Gemini ------------------------------------------------------------------

GEMINI_KEYWORDS = {
    "type", "format", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum", "title",
}  # fmt: skip
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


def assert_gemini_compatible(parameters: dict[str, Any]) -> None:
    assert parameters["type"] == "object"
    assert parameters["properties"], "parameters without properties must be left out"
    for path, node, _ in _subschemas(parameters):
        assert isinstance(node, dict), path
        assert node.keys() <= GEMINI_KEYWORDS, (path, node.keys() - GEMINI_KEYWORDS)
        if "type" in node:
            assert node["type"] in GEMINI_TYPES, path
        if "enum" in node:
            assert all(isinstance(v, str) for v in node["enum"]), path
            assert node.get("type") == "string", path
        for name in node.get("required", ()):
            assert name in node["properties"], path


def test_gemini_tools_stay_in_the_subset() -> None:
    result = to_model_tools(DEFINITIONS, ModelFormat.GEMINI)
    names = [t["name"] for t in result.tools]
    assert names == [d.name for d in DEFINITIONS if d.name not in ("3d_render",)]
    for tool in result.tools:
        if "parameters" in tool:
            assert_gemini_compatible(tool["parameters"])
    by_name = {t["name"]: t for t in result.tools}
    assert "parameters" not in by_name["purge_cache"]
    left_out = [d for d in result.diagnostics if d.tool_name == "3d_render"]
    assert len(left_out) == 1
    assert left_out[0].path == ""
    assert "letter or an underscore" in left_out[0].message


def test_gemini_reports_closed_objects_once_per_tool() -> None:
    result = to_model_tools(DEFINITIONS, ModelFormat.GEMINI)
    closed = [d for d in result.diagnostics if "additionalProperties: false" in d.message]
    tools = [d.tool_name for d in closed]
    assert len(tools) == len(set(tools))
    assert "create_event" in tools  # closed at the root and in attendees' items


def test_gemini_cuts_recursion() -> None:
    result = to_model_tools([DEFINITIONS[2]], ModelFormat.GEMINI)
    root = result.tools[0]["parameters"]["properties"]["root"]
    assert root["description"] == "The new subtree."
    assert root["properties"]["children"]["items"] == {"type": "object"}
    assert any("recursive $ref" in d.message for d in result.diagnostics)


# --- MCP ---------------------------------------------------------------------


def test_mcp_annotations_follow_the_tier() -> None:
    result = to_model_tools(DEFINITIONS, ModelFormat.MCP)
    by_name = {t["name"]: t for t in result.tools}
    assert by_name["get_weather"]["title"] == "Weather"
    assert by_name["get_weather"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert by_name["purge_cache"]["annotations"]["destructiveHint"] is True
    assert by_name["purge_cache"]["annotations"]["readOnlyHint"] is False
    assert by_name["set_labels"]["outputSchema"] == DEFINITIONS[3].output_schema
    assert "outputSchema" not in by_name["translate_text"]
    assert [d.tool_name for d in result.diagnostics] == ["translate_text"]


# --- every format ------------------------------------------------------------


def test_name_of_64_characters_is_kept_everywhere() -> None:
    assert len(NAME_OF_64) == 64
    for fmt in ModelFormat:
        dumped = json.dumps(to_model_tools(DEFINITIONS, fmt).tools)
        assert f'"{NAME_OF_64}"' in dumped, fmt


def _scribble(value: Any) -> None:
    """Change every container in `value`, to catch outputs sharing the inputs."""
    if isinstance(value, dict):
        for child in list(value.values()):
            _scribble(child)
        value["scribbled"] = True
    elif isinstance(value, list):
        for child in value:
            _scribble(child)
        value.append("scribbled")


def _assert_untouched(definitions: list[ToolDefinition]) -> None:
    before = [copy.deepcopy(d.model_dump()) for d in definitions]
    for fmt in ModelFormat:
        _scribble(to_model_tools(definitions, fmt).tools)
    assert [d.model_dump() for d in definitions] == before


def test_definitions_are_never_modified() -> None:
    _assert_untouched(DEFINITIONS)


# --- random schemas ----------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "when", "x/y", "ü"])
_LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 0, "default": 3},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "uri"},
        {"type": "string", "enum": ["x", "y"]},
        {"enum": [1, 2.5, None]},
        {"const": "k"},
        {"type": ["number", "null"]},
        {"type": "boolean", "description": "flag */ ✓"},
        {"type": "string", "minLength": 2},
        {"$ref": "#/$defs/Node"},
        {"$ref": "#/$defs/Node", "description": "a node"},
        {"type": "object"},
        {},
    ]
)


@st.composite
def _objects(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    properties = draw(st.dictionaries(_NAMES, children, max_size=3))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    if required:
        schema["required"] = required
    extra = draw(st.sampled_from([None, False, False, True, {"type": "string"}]))
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _objects(children),
        _objects(children),
        children.map(lambda c: {"type": "array", "items": c}),
        st.lists(children, min_size=2, max_size=3).map(lambda bs: {"anyOf": bs}),
        st.lists(children, min_size=2, max_size=2).map(lambda bs: {"oneOf": bs}),
        children.map(lambda c: {"allOf": [c]}),
        children.map(lambda c: {"not": c}),
    )


_SCHEMAS = st.recursive(_LEAVES, _extend, max_leaves=10)


@st.composite
def _definitions(draw: st.DrawFn) -> ToolDefinition:
    properties = draw(st.dictionaries(_NAMES, _SCHEMAS, max_size=4))
    required = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    schema: dict[str, Any] = {
        "type": "object",
        "$defs": copy.deepcopy(NODE_DEFS),
        "properties": properties,
        "required": required,
    }
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return _define(name="random_tool", input_schema=schema)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_definitions())
def test_random_schemas(definition: ToolDefinition) -> None:
    for fmt in (ModelFormat.OPENAI_CHAT, ModelFormat.OPENAI_RESPONSES):
        result = to_model_tools([definition], fmt)
        tool = result.tools[0]
        check_openai(definition, tool.get("function", tool), result.diagnostics)
    gemini = to_model_tools([definition], ModelFormat.GEMINI).tools[0]
    if "parameters" in gemini:
        assert_gemini_compatible(gemini["parameters"])
    else:
        assert not definition.parameters
    _assert_untouched([definition])
