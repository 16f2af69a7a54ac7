"""`@tool`: schemas from signatures, descriptions from docstrings, handlers that
call the function.

This module uses `from __future__ import annotations` on purpose: every
annotation below is a string that the decorator has to resolve.
"""

from __future__ import annotations

import enum
import functools
import inspect
import time
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Literal, Optional

import jsonschema_rs
import pytest
from pydantic import BaseModel, Field
from toolwire.declare import DeclaredTool, as_tool, parse_docstring, tool
from toolwire.errors import InvalidDefinitionError
from toolwire.models import CallContext, ErrorCode, SafetyTier, ToolDefinition
from toolwire.registry import ToolRegistry
from toolwire.schema import normalize_definition
from toolwire.tools import Tool, ToolContext
from toolwire.validation import ArgumentError


def context(name: str = "t") -> ToolContext:
    return ToolContext(
        tool_name=name, call=CallContext(caller_id="me"), deadline=time.monotonic() + 5
    )


def schema_of(func: Callable[..., Any]) -> dict[str, Any]:
    schema = as_tool(func).definition.input_schema
    assert schema is not None
    return schema


def properties_of(func: Callable[..., Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema_of(func)["properties"]
    return properties


def keys_named(node: Any, key: str) -> list[Any]:
    """Every value stored under `key` anywhere in a JSON document."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == key] + [
            x for v in node.values() for x in keys_named(v, key)
        ]
    if isinstance(node, list):
        return [x for v in node for x in keys_named(v, key)]
    return []


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    x: int
    y: int = 0
    title: str = ""
    """A field called `title`: the clean-up drops the keyword, not the property."""


class Shape(BaseModel):
    points: list[Point]
    color: Color = Color.RED


# --- schemas ---------------------------------------------------------------------


def test_scalars_are_required_json_types_in_a_closed_object() -> None:
    def f(s: str, i: int, x: float, b: bool) -> None: ...

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
        },
        "required": ["s", "i", "x", "b"],
        "additionalProperties": False,
    }


def test_containers() -> None:
    def f(tags: list[str], counts: dict[str, int], anything: dict[str, Any]) -> None: ...

    props = properties_of(f)
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["anything"] == {"type": "object", "additionalProperties": True}


def test_defaults_are_stated_and_make_a_parameter_optional() -> None:
    def f(path: str, limit: int = 100, recursive: bool = False) -> None: ...

    schema = schema_of(f)
    assert schema["required"] == ["path"]
    assert schema["properties"]["limit"] == {"type": "integer", "default": 100}
    assert schema["properties"]["recursive"] == {"type": "boolean", "default": False}


def test_literal_becomes_an_enum() -> None:
    def f(
        mode: Literal["fast", "exact"], only: Literal["yes"], level: Literal[1, 2] = 1
    ) -> None: ...

    props = properties_of(f)
    assert props["mode"] == {"type": "string", "enum": ["fast", "exact"]}
    assert props["only"] == {"type": "string", "enum": ["yes"]}
    assert props["level"]["enum"] == [1, 2]
    assert props["level"]["default"] == 1


def test_enum_classes_become_inline_enum_values() -> None:
    def f(color: Color, priority: Priority = Priority.LOW) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["color"] == {"type": "string", "enum": ["red", "green"]}
    assert schema["properties"]["priority"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert "$defs" not in schema
    assert as_tool(f).definition.parameters[0].enum_values == ("red", "green")


def test_optional_with_none_default_is_not_required_but_optional_without_default_is() -> None:
    def f(a: Optional[str] = None, b: int | None = None) -> None: ...  # noqa: UP045

    def g(must: str | None) -> None: ...

    props = properties_of(f)
    assert schema_of(f)["required"] == []
    assert props["a"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["b"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert schema_of(g)["required"] == ["must"]


def test_pydantic_model_parameters_keep_their_defs_and_lose_every_title() -> None:
    def f(shape: Shape, extra: list[Point] | None = None) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["shape"] == {"$ref": "#/$defs/Shape"}
    assert set(schema["$defs"]) == {"Shape", "Point"}
    assert schema["$defs"]["Point"] == {
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "integer", "default": 0},
            "title": {"type": "string", "default": ""},
        },
        "required": ["x"],
    }
    assert all(not isinstance(t, str) for t in keys_named(schema, "title"))
    # the enum used inside the model is inlined there too
    assert schema["$defs"]["Shape"]["properties"]["color"]["enum"] == ["red", "green"]
    assert "Color" not in schema["$defs"]


def test_the_schema_accepts_good_calls_and_rejects_bad_ones() -> None:
    def f(shape: Shape, mode: Literal["a", "b"] = "a", color: Color | None = None) -> None: ...

    validator = jsonschema_rs.validator_for(schema_of(f))
    assert validator.is_valid({"shape": {"points": [{"x": 1}, {"x": 2, "y": 3}]}})
    assert validator.is_valid({"shape": {"points": []}, "mode": "b", "color": "green"})
    assert not validator.is_valid({})
    assert not validator.is_valid({"shape": {"points": [{"y": 1}]}})
    assert not validator.is_valid({"shape": {"points": []}, "mode": "c"})
    assert not validator.is_valid({"shape": {"points": []}, "color": "blue"})
    assert not validator.is_valid({"shape": {"points": []}, "unknown": 1})


def test_annotated_field_description_wins_over_the_docstring() -> None:
    def f(
        query: Annotated[str, Field(description="What to look for.", min_length=1)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> None:
        """Searches.

        Args:
            query: Docstring text that loses.
            limit: Docstring text that counts.
        """

    props = properties_of(f)
    assert props["query"] == {"type": "string", "description": "What to look for.", "minLength": 1}
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "maximum": 50,
        "description": "Docstring text that counts.",
    }


def test_parameter_names_that_clash_with_pydantic_are_fine() -> None:
    @tool
    def f(schema: str, json: int, model_config: bool = False, _copy: str = "") -> Any:
        return schema, json, model_config, _copy

    assert schema_of(f)["required"] == ["schema", "json"]
    assert list(properties_of(f)) == ["schema", "json", "model_config", "_copy"]
    assert f.tool.handler({"schema": "s", "json": 1, "_copy": "c"}, context()) == (
        "s",
        1,
        False,
        "c",
    )


def test_richer_types_use_pydantic_json_schema() -> None:
    def f(day: date, pair: tuple[int, str]) -> None: ...

    props = properties_of(f)
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["pair"]["type"] == "array"
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]


def test_tool_context_parameters_are_not_in_the_schema() -> None:
    def a(path: str, context: ToolContext) -> None: ...

    def b(ctx: ToolContext, path: str) -> None: ...

    def c(path: str, call_info: ToolContext) -> None: ...

    for f in (a, b, c):
        assert list(properties_of(f)) == ["path"]
        assert schema_of(f)["required"] == ["path"]


def test_an_optional_or_annotated_tool_context_is_injected_too() -> None:
    def a(path: str, context: ToolContext | None = None) -> None: ...

    def b(path: str, context: Annotated[ToolContext, "the call"]) -> None: ...

    for f in (a, b):
        assert list(properties_of(f)) == ["path"]


def test_a_parameter_called_context_with_another_type_is_an_argument() -> None:
    def f(context: str) -> None: ...

    assert list(properties_of(f)) == ["context"]


SCHEMA_SAMPLES: list[Callable[..., Any]] = []


def sample(f: Callable[..., Any]) -> Callable[..., Any]:
    SCHEMA_SAMPLES.append(f)
    return f


@sample
def no_parameters() -> str:
    return ""


@sample
def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    counts: dict[str, int],
    mode: Literal["a", "b"],
    color: Color,
    shape: Shape,
    described: Annotated[str, Field(description="d", pattern="^x")],
    maybe: Optional[int] = None,  # noqa: UP045
    either: str | None = None,
    points: list[Point] | None = None,
    day: date | None = None,
    priority: Priority = Priority.HIGH,
    nested: dict[str, list[int]] | None = None,
    *,
    context: ToolContext,
) -> str:
    return ""


@sample
async def async_one(query: str, limit: int = 5) -> list[str]:
    return []


@pytest.mark.parametrize("func", SCHEMA_SAMPLES, ids=lambda f: f.__name__)
def test_every_generated_schema_is_a_valid_definition(func: Callable[..., Any]) -> None:
    definition = tool(func).definition
    assert definition.input_schema is not None
    jsonschema_rs.meta.validate(definition.input_schema)
    # from the schema alone, as a remote caller would send it
    normalized = normalize_definition(
        ToolDefinition(name=definition.name, input_schema=definition.input_schema)
    )
    assert normalized.parameters == definition.parameters
    assert [p.name for p in definition.parameters] == list(definition.input_schema["properties"])
    # and again, with both forms given (what the registry sees from @tool)
    assert normalize_definition(definition) == definition


# --- docstrings ------------------------------------------------------------------


def test_the_summary_is_the_text_before_the_sections() -> None:
    def f(path: str, mode: str = "r") -> str:
        """Reads a file
        from the workspace.

        Paths are relative to
        the workspace root.

        Args:
            path: Where the file is.
            mode: How to open it.

        Returns:
            The text.

        Raises:
            FileNotFoundError: if it is not there.
        """
        return ""

    definition = tool(f).definition
    assert definition.description == (
        "Reads a file from the workspace.\n\nPaths are relative to the workspace root."
    )
    props = properties_of(f)
    assert props["path"]["description"] == "Where the file is."
    assert props["mode"]["description"] == "How to open it."


@pytest.mark.parametrize("header", ["Args", "Arguments", "Parameters"])
def test_parameter_sections(header: str) -> None:
    doc = f"""Does it.

    {header}:
        first (int): One line.
        second: Starts here
            and goes on
              over several lines.
        third:
            Only on the next line.
    """
    summary, params = parse_docstring(doc)
    assert summary == "Does it."
    assert params == {
        "first": "One line.",
        "second": "Starts here and goes on over several lines.",
        "third": "Only on the next line.",
    }


def test_docstring_edge_cases() -> None:
    assert parse_docstring("") == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})
    assert parse_docstring("Summary.\n\nReturns:\n    x: not a parameter.\n") == ("Summary.", {})
    assert parse_docstring("Note: this colon is prose.\n\nArgs:\n    a: A.") == (
        "Note: this colon is prose.",
        {"a": "A."},
    )
    assert parse_docstring("Sum.\n\nArgs:\n    *items: The items.\n    **opts: More.")[1] == {
        "items": "The items.",
        "opts": "More.",
    }


def test_no_docstring_means_an_empty_description() -> None:
    def f(x: int) -> None: ...

    definition = tool(f).definition
    assert definition.description == ""
    assert "description" not in properties_of(f)["x"]


def test_options() -> None:
    class Out(BaseModel):
        lines: list[str]

    @tool(
        name="read-text",
        description="Reads text.",
        safety_tier=SafetyTier.READ_ONLY,
        group="files",
        timeout_seconds=2.5,
        labels={"owner": "docs"},
        output_schema=Out,
    )
    def read(path: str) -> dict[str, Any]:
        """Ignored, since the description is given."""
        return {"lines": [path]}

    d = read.definition
    assert (d.name, d.description, d.safety_tier, d.group) == (
        "read-text",
        "Reads text.",
        SafetyTier.READ_ONLY,
        "files",
    )
    assert (d.timeout_seconds, d.labels) == (2.5, {"owner": "docs"})
    assert d.output_schema == {
        "type": "object",
        "properties": {"lines": {"type": "array", "items": {"type": "string"}}},
        "required": ["lines"],
    }

    @tool(output_schema={"type": "string"})
    def plain() -> str:
        return ""

    assert plain.definition.output_schema == {"type": "string"}
    assert plain.definition.safety_tier is SafetyTier.SIDE_EFFECTING


def test_an_invalid_output_schema_is_refused_at_declaration() -> None:
    with pytest.raises(InvalidDefinitionError, match="output_schema"):

        @tool(output_schema={"type": "no-such-type"})
        def f() -> None: ...


# --- errors --------------------------------------------------------------------------


def test_star_args_are_rejected() -> None:
    def f(*paths: str) -> None: ...

    with pytest.raises(TypeError, match=r"tool 'f': \*paths is not supported"):
        tool(f)


def test_star_star_kwargs_are_rejected() -> None:
    def f(path: str, **options: str) -> None: ...

    with pytest.raises(TypeError, match=r"tool 'f': \*\*options is not supported"):
        tool(f)


def test_a_parameter_without_annotation_is_named() -> None:
    def f(path: str, limit=10) -> None: ...  # type: ignore[no-untyped-def]

    with pytest.raises(TypeError, match="tool 'f', parameter 'limit' has no type annotation"):
        tool(f)


def test_a_method_gets_a_hint() -> None:
    class Files:
        def read(self, path: str) -> str:
            return path

    with pytest.raises(TypeError, match=r"parameter 'self'.*as_tool\(obj\.method\)"):
        tool(Files.read)
    bound = as_tool(Files().read)
    assert list((bound.definition.input_schema or {})["properties"]) == ["path"]
    assert bound.handler({"path": "a"}, context()) == "a"


def test_other_signatures_that_cannot_be_tools() -> None:
    def positional(path: str, /) -> None: ...

    def two_contexts(a: ToolContext, b: ToolContext) -> None: ...

    def gen(n: int) -> Any:
        yield n

    with pytest.raises(TypeError, match="positional-only"):
        tool(positional)
    with pytest.raises(TypeError, match="only one parameter can receive the ToolContext"):
        tool(two_contexts)
    with pytest.raises(TypeError, match="generator"):
        tool(gen)
    with pytest.raises(InvalidDefinitionError, match="'<lambda>'"):
        tool(lambda: None)
    with pytest.raises(TypeError, match="has no __name__"):
        as_tool(functools.partial(positional, "x"))


class Opaque:
    """Not a type pydantic can describe."""


def test_a_type_without_a_json_schema_names_the_tool() -> None:
    def f(thing: Opaque) -> None: ...

    with pytest.raises(TypeError, match="tool 'f': cannot build a JSON Schema for its parameters"):
        tool(f)


def test_unresolvable_annotations_say_so() -> None:
    class Local(BaseModel):
        a: int

    def f(item: Local) -> None: ...  # a string annotation naming a class local to this test

    with pytest.raises(TypeError, match=r"cannot resolve its annotations.*Local"):
        tool(f)


# --- handlers --------------------------------------------------------------------


def test_a_sync_function_gives_a_blocking_sync_handler() -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        return a + b

    assert add.tool.blocking is True
    assert not inspect.iscoroutinefunction(add.tool.handler)
    assert add.tool.handler({"a": 2}, context()) == 3
    assert add.tool.handler({"a": 2, "b": 5}, context()) == 7


async def test_an_async_function_gives_an_async_handler() -> None:
    @tool
    async def shout(text: str, ctx: ToolContext) -> str:
        return f"{text.upper()} ({ctx.tool_name} for {ctx.call.caller_id})"

    assert shout.tool.blocking is False
    assert inspect.iscoroutinefunction(shout.tool.handler)
    assert await shout.tool.handler({"text": "hi"}, context("shout")) == "HI (shout for me)"

    @tool
    async def plain(text: str) -> str:
        return text

    assert await plain.tool.handler({"text": "x"}, context()) == "x"


def test_the_call_context_is_injected() -> None:
    seen: list[ToolContext] = []

    @tool
    def who(name: str, context: ToolContext) -> str:
        seen.append(context)
        return name

    ctx = context("who")
    assert who.tool.handler({"name": "n"}, ctx) == "n"
    assert seen == [ctx]


def test_plain_json_arguments_pass_through_untouched() -> None:
    received: dict[str, Any] = {}

    @tool
    def f(
        tags: list[str],
        meta: dict[str, Any],
        ratio: float,
        mode: Literal["a", "b"],
        maybe: str | None = None,
    ) -> None:
        received.update(tags=tags, meta=meta, ratio=ratio, mode=mode, maybe=maybe)

    arguments = {"tags": ["x"], "meta": {"k": [1]}, "ratio": 2, "mode": "a"}
    f.tool.handler(arguments, context())
    assert received["tags"] is arguments["tags"]
    assert received["meta"] is arguments["meta"]
    assert received["ratio"] == 2
    assert type(received["ratio"]) is int
    assert received["maybe"] is None


def test_integral_floats_become_ints_for_int_parameters() -> None:
    @tool
    def f(n: int, m: int | None = None, ns: list[int] | None = None, x: float = 0) -> Any:
        return n, m, ns, x

    result = f.tool.handler({"n": 3.0, "m": 4.0, "ns": [1.0, 2], "x": 5.0}, context())
    assert result == (3, 4, [1, 2], 5.0)
    assert [type(v) for v in (result[0], result[1], *result[2], result[3])] == [
        int,
        int,
        int,
        int,
        float,
    ]


def test_rich_arguments_are_converted() -> None:
    @tool
    def f(shape: Shape, color: Color, day: date, points: list[Point] | None = None) -> Any:
        return shape, color, day, points

    shape, color, day, points = f.tool.handler(
        {
            "shape": {"points": [{"x": 1}], "color": "green"},
            "color": "red",
            "day": "2026-01-02",
            "points": [{"x": 2, "y": 3}],
        },
        context(),
    )
    assert shape == Shape(points=[Point(x=1)], color=Color.GREEN)
    assert color is Color.RED
    assert day == date(2026, 1, 2)
    assert points == [Point(x=2, y=3)]


def test_a_conversion_failure_names_the_argument() -> None:
    @tool
    def f(shape: Shape) -> None: ...

    with pytest.raises(ArgumentError, match=r"'shape' is invalid: shape\.points"):
        f.tool.handler({"shape": {}}, context())


async def test_a_conversion_failure_is_an_invalid_arguments_result() -> None:
    @tool
    def f(day: date) -> None: ...

    registry = ToolRegistry()
    registry.register(f.tool)
    result = await registry.dispatch("f", {"day": "2026-13-45"})  # passes "format": "date"
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.startswith("invalid arguments for 'f': ")


# --- the decorated function -----------------------------------------------------


def test_the_decorated_function_is_still_the_function() -> None:
    def greet(name: str, punctuation: str = "!") -> str:
        """Greets someone."""
        return f"hello {name}{punctuation}"

    declared = tool(greet)
    assert isinstance(declared, DeclaredTool)
    assert declared("ada") == "hello ada!"
    assert declared(name="bob", punctuation="?") == "hello bob?"
    assert declared.__wrapped__ is greet
    assert declared.__name__ == "greet"
    assert declared.__doc__ == "Greets someone."
    assert declared.__module__ == __name__
    assert isinstance(declared.tool, Tool)
    assert declared.definition is declared.tool.definition
    assert "greet" in repr(declared)


async def test_a_decorated_coroutine_function_is_awaited_directly() -> None:
    @tool
    async def double(n: int) -> int:
        return 2 * n

    assert await double(4) == 8


def test_as_tool_accepts_tools_declared_tools_and_functions() -> None:
    def f(x: int) -> int:
        return x

    declared = tool(f)
    made = Tool.of(ToolDefinition(name="t"), lambda args, ctx: None)
    assert as_tool(made) is made
    assert as_tool(declared) is declared.tool
    on_the_fly = as_tool(f)
    assert on_the_fly.definition == declared.definition
    assert on_the_fly.handler({"x": 1}, context()) == 1
    with pytest.raises(TypeError, match="expected a Tool"):
        as_tool(42)  # type: ignore[arg-type]


def test_redeclaring_a_declared_tool_starts_from_the_function() -> None:
    @tool
    def f(x: int) -> int:
        return x

    renamed = tool(name="g")(f)
    assert renamed.definition.name == "g"
    assert renamed.__wrapped__ is f.__wrapped__
    assert renamed(3) == 3
