"""Type-checking code before it runs: diagnostics in the code's own lines, the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolwire.models import ToolDefinition
from toolwire.sandbox import DenoRuntime
from toolwire.sandbox.check import parse_diagnostics
from toolwire.sandbox.source import compose
from toolwire.stubs import generate_stubs

STUBS = generate_stubs(
    [
        ToolDefinition(
            name="add",
            description="Add two numbers.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        )
    ]
)

BAD_CODE = """\
const total = await add({ a: 1, b: 2 });
console.log(total);
await add({ a: "1", b: 2 });
const label: number = "x";
return undefinedName;
"""


async def run(runtime: DenoRuntime, code: str, **options: Any) -> Any:
    return await runtime.run(code, stubs=STUBS, base_url="", token="t", **options)


async def test_type_errors_fail_the_run_with_diagnostics_in_the_codes_lines(
    runtime: DenoRuntime,
) -> None:
    outcome = await run(runtime, BAD_CODE)
    assert not outcome.ok
    assert outcome.error == "the code does not type-check (3 errors)"
    assert outcome.limit_hit is None
    assert outcome.console == ""
    assert outcome.exit_code is None  # nothing ran
    first, second, third = outcome.diagnostics
    assert first.splitlines() == [
        "line 3: Type 'string' is not assignable to type 'number'.",
        '  await add({ a: "1", b: 2 });',
        "              ^",
        "  note (in the tool stubs): The expected type comes from property 'a' which is "
        "declared here on type 'AddParams'",
    ]
    assert second.startswith("line 4: Type 'string' is not assignable to type 'number'.\n")
    assert third.startswith("line 5: Cannot find name 'undefinedName'.")
    for diagnostic in outcome.diagnostics:
        assert "\x1b[" not in diagnostic
        assert "file://" not in diagnostic
    assert outcome.check_seconds > 0


async def test_check_false_skips_the_check(runtime: DenoRuntime) -> None:
    code = 'const n: number = "not a number" as unknown as number;\nconst s: string = 5 as any;\n'
    code += 'const wrong: number = "x";\nreturn [n, s, wrong];'
    outcome = await run(runtime, code, check=False)
    assert outcome.ok, outcome.error
    assert outcome.value == ["not a number", 5, "x"]
    assert outcome.check_seconds == 0


async def test_a_repeated_check_comes_from_the_cache(runtime: DenoRuntime) -> None:
    code = "const sum = await Promise.resolve(1 + 2);\nreturn sum * 2;"
    first = await run(runtime, code, check=True)
    again = await run(runtime, code, check=True)
    assert first.ok and again.ok, (first.error, again.error)
    assert not first.check_cached
    assert again.check_cached
    assert again.check_seconds < 0.01
    assert again.value == 6

    failing = await run(runtime, BAD_CODE)  # failures are cached too
    assert failing.check_cached
    assert len(failing.diagnostics) == 3


async def test_the_checker_reads_no_file_outside_the_code(
    runtime: DenoRuntime, tmp_path: Path
) -> None:
    # deno check runs without the sandbox's permissions: imports must not let it
    # read files and describe them in a diagnostic.
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"sensitiveKeyName": "value"}))
    module = tmp_path / "secret.ts"
    module.write_text("export const sensitiveConstant: number = 42;\n")
    code = (
        f'const data = await import("{secret}", {{ with: {{ type: "json" }} }});\n'
        "const n: number = data.default;\n"
        f'const other = await import("{module.as_uri()}");\n'
        "const s: string = other.sensitiveConstant;\n"
        "return [n, s];\n"
    )
    outcome = await run(runtime, code)
    text = outcome.error + "\n".join(outcome.diagnostics)
    assert "sensitiveKeyName" not in text
    assert "sensitiveConstant" not in text
    assert "secret" not in text or "Requires read access" in text
    # The check passes (the imports are opaque to it); running refuses the read.
    assert not outcome.ok
    assert f'TypeError: Requires read access to "{secret}"' in outcome.error


async def test_static_imports_smuggled_past_the_wrapper_are_refused(
    runtime: DenoRuntime, tmp_path: Path
) -> None:
    module = tmp_path / "helper.ts"
    module.write_text("export const hidden: number = 1;\n")
    code = f'return 1;\n}}\nimport {{ hidden }} from "{module}";\nexport function x() {{\n'
    outcome = await run(runtime, code)
    assert not outcome.ok
    (diagnostic,) = outcome.diagnostics
    assert diagnostic.startswith("line 3: Cannot import files here")

    unchecked = await run(runtime, code, check=False)
    assert not unchecked.ok
    assert f'Requires read access to "{module}"' in unchecked.error


def test_diagnostics_parse_deno_checks_report() -> None:
    source = compose("const a = 1;\nconst b: string = a;\n", "")
    url = "file:///tmp/x/user.ts"
    report = (
        "\x1b[0m\x1b[1mTS2322 \x1b[0m[ERROR]: Type 'number' is not assignable to type 'string'.\n"
        "const b: string = a;\n"
        "\x1b[31m      ^\x1b[0m\n"
        f"    at \x1b[36m{url}\x1b[0m:\x1b[33m4\x1b[0m:\x1b[33m7\x1b[0m\n"
        "\n"
        "TS2345 [ERROR]: Argument of type '{ a: string; }' is not assignable to parameter.\n"
        "  Types of property 'a' are incompatible.\n"
        "    Type 'string' is not assignable to type 'number'.\n"
        f"    at {url}:1:1\n"
        "\n"
        "Found 2 errors.\n"
        "\n"
        "error: Type checking failed.\n"
    )
    assert parse_diagnostics(report, source, url) == [
        "line 2: Type 'number' is not assignable to type 'string'.\n"
        "  const b: string = a;\n"
        "        ^",
        "in the tool stubs: Argument of type '{ a: string; }' is not assignable to parameter.\n"
        "  Types of property 'a' are incompatible.\n"
        "    Type 'string' is not assignable to type 'number'.",
    ]
