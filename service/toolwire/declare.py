"""`@tool`: a typed Python function becomes a tool.

    @tool(safety_tier=SafetyTier.READ_ONLY)
    def read_file(path: str, context: ToolContext, limit: int = 100) -> str:
        '''Reads a text file from the workspace.

        Args:
            path: Path relative to the workspace root.
            limit: Lines to return at most.
        '''

The signature is the contract: pydantic turns it into the tool's input schema,
the docstring's summary becomes the description and its `Args:` section the
parameter descriptions. The decorated function stays an ordinary function
(`read_file("a.txt")` still works); `read_file.tool` is what the registry holds.

The handler calls the function with keyword arguments. Arguments arrive
validated against the schema, so plain JSON types (str, int, float, bool, list,
dict, Literal) pass through untouched and only richer types (pydantic models,
enums, dates, tuples, …) are converted, by a TypeAdapter built once here.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import types
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    ParamSpec,
    TypeVar,
    Union,
    get_args,
    get_origin,
    overload,
)

import pydantic

from .errors import InvalidDefinitionError
from .models import JsonObject, SafetyTier, ToolDefinition
from .names import name_problem
from .schema import normalize_definition
from .tools import Handler, Tool, ToolContext
from .validation import ArgumentError

__all__ = ["DeclaredTool", "as_tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


class DeclaredTool(Generic[P, R]):
    """A function declared as a tool: call it like the function, register `.tool`."""

    __wrapped__: Callable[P, R]
    __name__: str
    __qualname__: str

    def __init__(self, func: Callable[P, R], tool: Tool) -> None:
        functools.update_wrapper(self, func)
        self.tool = tool
        if sys.version_info >= (3, 12) and not tool.blocking:
            inspect.markcoroutinefunction(self)

    @property
    def definition(self) -> ToolDefinition:
        return self.tool.definition

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        target = getattr(self.__wrapped__, "__qualname__", repr(self.__wrapped__))
        return f"<tool {self.definition.name!r} of {target}>"


@overload
def tool(func: Callable[P, R], /) -> DeclaredTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
    group: str = "",
    timeout_seconds: float | None = None,
    labels: Mapping[str, str] | None = None,
    output_schema: Mapping[str, Any] | type[Any] | None = None,
    requires_approval: bool = False,
    command_argument: str = "",
    max_concurrency: int = 0,
) -> Callable[[Callable[P, R]], DeclaredTool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
    group: str = "",
    timeout_seconds: float | None = None,
    labels: Mapping[str, str] | None = None,
    output_schema: Mapping[str, Any] | type[Any] | None = None,
    requires_approval: bool = False,
    command_argument: str = "",
    max_concurrency: int = 0,
) -> DeclaredTool[P, R] | Callable[[Callable[P, R]], DeclaredTool[P, R]]:
    """Declares a function as a tool; use as `@tool` or `@tool(name=..., ...)`.

    Args:
        name: The tool's name; the function's name by default.
        description: What the tool does, for the model; the docstring's summary
            by default.
        safety_tier: How much the tool can change the world.
        group: A group name for listing and policies.
        timeout_seconds: Per-call timeout; None means the registry's default.
        labels: Free-form metadata.
        output_schema: A JSON Schema of the structured output, or a type
            (a pydantic model, a TypedDict, …) to derive it from.
        requires_approval: Every call needs an operator's approval ticket.
        command_argument: The (string) parameter that holds a shell command
            line: the tool is command-running, under exec approvals.
        max_concurrency: At most this many calls at once (0: no limit).

    Raises:
        TypeError: the signature cannot be a tool's (`*args`, `**kwargs`,
            a parameter without annotation, …).
        InvalidDefinitionError: the resulting definition is invalid (a bad name,
            an invalid output schema).
    """

    def declare(f: Callable[P, R]) -> DeclaredTool[P, R]:
        target = f.__wrapped__ if isinstance(f, DeclaredTool) else f
        built = _build_tool(
            target,
            name=name,
            description=description,
            safety_tier=safety_tier,
            group=group,
            timeout_seconds=timeout_seconds,
            labels=labels,
            output_schema=output_schema,
            requires_approval=requires_approval,
            command_argument=command_argument,
            max_concurrency=max_concurrency,
        )
        return DeclaredTool(target, built)

    return declare if func is None else declare(func)


def as_tool(obj: Tool | DeclaredTool[..., Any] | Callable[..., Any]) -> Tool:
    """A `Tool` from a Tool, a `@tool` function, or a plain typed function
    (declared on the fly with the defaults of `@tool`)."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, DeclaredTool):
        return obj.tool
    if callable(obj):
        return tool(obj).tool
    raise TypeError(f"expected a Tool, a @tool function or a function, got {type(obj).__name__}")


# --- the definition ----------------------------------------------------------


def _build_tool(
    func: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    safety_tier: SafetyTier,
    group: str,
    timeout_seconds: float | None,
    labels: Mapping[str, str] | None,
    output_schema: Mapping[str, Any] | type[Any] | None,
    requires_approval: bool = False,
    command_argument: str = "",
    max_concurrency: int = 0,
) -> Tool:
    tool_name = name if name is not None else getattr(func, "__name__", None)
    if not isinstance(tool_name, str):
        raise TypeError(f"{func!r} has no __name__; give the tool one: tool(name=...)(func)")
    problem = name_problem(tool_name)
    if problem:
        raise InvalidDefinitionError(f"{problem} (declare it with @tool(name=...))")
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise TypeError(f"tool '{tool_name}': generator functions cannot be tools; return a value")

    summary, parameter_docs = parse_docstring(inspect.getdoc(func) or "")
    signature = _signature(func, tool_name)
    parameters, context_name = _parameters(signature, tool_name)
    definition = normalize_definition(
        ToolDefinition(
            name=tool_name,
            description=description if description is not None else summary,
            input_schema=_input_schema(parameters, parameter_docs, tool_name),
            output_schema=_output_schema(output_schema, tool_name),
            safety_tier=safety_tier,
            group=group,
            timeout_seconds=timeout_seconds,
            labels=dict(labels or {}),
            requires_approval=requires_approval,
            command_argument=command_argument,
            max_concurrency=max_concurrency,
        )
    )
    is_async = _is_async(func)
    handler = _handler(func, parameters, context_name, is_async=is_async)
    return Tool(definition, handler, blocking=not is_async)


def _signature(func: Callable[..., Any], tool_name: str) -> inspect.Signature:
    try:
        return inspect.signature(func, eval_str=True)
    except NameError as e:
        raise TypeError(
            f"tool '{tool_name}': cannot resolve its annotations ({e}); "
            "the types must be importable from the function's module"
        ) from e
    except ValueError as e:
        raise TypeError(f"tool '{tool_name}': has no inspectable signature ({e})") from e


def _parameters(
    signature: inspect.Signature, tool_name: str
) -> tuple[dict[str, inspect.Parameter], str | None]:
    """The parameters the model fills in, and the one that receives the ToolContext."""
    parameters: dict[str, inspect.Parameter] = {}
    context_name: str | None = None
    for p in signature.parameters.values():
        where = f"tool '{tool_name}', parameter '{p.name}'"
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(
                f"tool '{tool_name}': *{p.name} is not supported; a tool's arguments are a JSON "
                "object of named fields, so declare each one as a parameter"
            )
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise TypeError(
                f"tool '{tool_name}': **{p.name} is not supported; declare each argument as a "
                "parameter so that the model sees it in the schema"
            )
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"{where} is positional-only; tools are called with named arguments")
        if p.annotation is inspect.Parameter.empty:
            hint = ""
            if p.name in ("self", "cls"):
                hint = " (decorate functions, not methods; as_tool(obj.method) takes a bound one)"
            raise TypeError(f"{where} has no type annotation; annotate it{hint}")
        if _receives_context(p.annotation):
            if context_name is not None:
                raise TypeError(f"{where}: only one parameter can receive the ToolContext")
            context_name = p.name
            continue
        parameters[p.name] = p
    return parameters, context_name


def _receives_context(annotation: Any) -> bool:
    """`ToolContext`, also as `ToolContext | None` or inside `Annotated`."""
    annotation = _strip_annotated(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        members = {_strip_annotated(a) for a in get_args(annotation)} - {type(None)}
        return members == {ToolContext}
    return annotation is ToolContext


def _strip_annotated(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _input_schema(
    parameters: Mapping[str, inspect.Parameter], docs: Mapping[str, str], tool_name: str
) -> JsonObject:
    # Fields get neutral names and the parameter names as aliases, so that
    # parameters called `schema`, `json`, `model_config` or `_x` are fine.
    fields: dict[str, Any] = {
        f"p{i}": (
            p.annotation,
            pydantic.Field(alias=p.name)
            if p.default is inspect.Parameter.empty
            else pydantic.Field(p.default, alias=p.name),
        )
        for i, p in enumerate(parameters.values())
    }
    try:
        model = pydantic.create_model("Arguments", **fields)
        raw = model.model_json_schema(by_alias=True)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as e:
        raise TypeError(
            f"tool '{tool_name}': cannot build a JSON Schema for its parameters: {e}"
        ) from e
    schema = clean_schema(raw)
    properties: dict[str, Any] = schema.get("properties", {})
    for param_name, text in docs.items():
        prop = properties.get(param_name)
        if isinstance(prop, dict) and text and "description" not in prop:
            prop["description"] = text
    tidy: JsonObject = {
        "type": "object",
        "properties": properties,
        "required": schema.get("required", []),
        "additionalProperties": False,
    }
    if "$defs" in schema:
        tidy["$defs"] = schema["$defs"]
    return tidy


def _output_schema(
    output_schema: Mapping[str, Any] | type[Any] | None, tool_name: str
) -> JsonObject | None:
    if output_schema is None:
        return None
    if isinstance(output_schema, Mapping):
        return dict(output_schema)
    try:
        raw = pydantic.TypeAdapter(output_schema).json_schema(mode="serialization")
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as e:
        raise TypeError(
            f"tool '{tool_name}': cannot build a JSON Schema for output_schema: {e}"
        ) from e
    return clean_schema(raw)


# --- schema clean-up ---------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_LOCAL_DEF = "#/$defs/"


def clean_schema(schema: JsonObject) -> JsonObject:
    """Pydantic's JSON Schema, tidied for models: no `title`s, `const` as a
    one-value `enum`, enum types inlined where they are used; `$defs` stay for
    nested models only."""
    defs: dict[str, Any] = schema.get("$defs", {})
    enum_defs = {
        name: _without_title(d)
        for name, d in defs.items()
        if isinstance(d, dict) and "enum" in d and "properties" not in d
    }

    def visit(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: visit(v) for k, v in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [visit(v) for v in value]
            elif key in _SCHEMA_VALUES:
                out[key] = visit(value)
            else:
                out[key] = value
        if "const" in out and "enum" not in out:
            out["enum"] = [out.pop("const")]
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_LOCAL_DEF):
            inlined = enum_defs.get(ref.removeprefix(_LOCAL_DEF))
            if inlined is not None:
                del out["$ref"]
                out = {**inlined, **out}
        return out

    cleaned: JsonObject = visit(schema)
    kept = _referenced_defs(cleaned)
    if kept:
        cleaned["$defs"] = {k: v for k, v in cleaned["$defs"].items() if k in kept}
    else:
        cleaned.pop("$defs", None)
    return cleaned


def _without_title(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "title"}


def _referenced_defs(schema: JsonObject) -> set[str]:
    """The names under $defs that the schema outside $defs reaches, transitively."""
    defs: dict[str, Any] = schema.get("$defs", {})
    seen: set[str] = set()
    pending = [{k: v for k, v in schema.items() if k != "$defs"}]
    while pending:
        for ref in _refs(pending.pop()):
            if ref not in seen and ref in defs:
                seen.add(ref)
                pending.append(defs[ref])
    return seen


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    if not isinstance(node, dict):
        return []
    found = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_LOCAL_DEF):
        found.append(ref.removeprefix(_LOCAL_DEF))
    for key, value in node.items():
        if key not in ("$ref", "enum", "const", "default", "examples"):
            found += _refs(value)
    return found


# --- docstrings --------------------------------------------------------------

_ARGS_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
)
_SECTION = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|other parameters"
    r"|returns?|yields?|raises|examples?|notes?|attributes|see also|todo|warnings?"
    r"|references)\s*:\s*$",
    re.IGNORECASE,
)
_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(?P<text>.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section, whitespace-normalized,
    paragraphs kept) and the descriptions of a Google-style `Args:` section."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, entry_indent, current = header.group(1).lower(), None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in _ARGS_SECTIONS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        entry = _ENTRY.match(line.strip()) if indent == entry_indent else None
        if entry:
            current = entry.group("name")
            params[current] = entry.group("text")
        elif indent > entry_indent and current is not None:
            params[current] += " " + line
        else:
            current = None
    paragraphs = re.split(r"\n\s*\n", "\n".join(summary))
    text = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    return text, {k: " ".join(v.split()) for k, v in params.items()}


# --- the handler ---------------------------------------------------------------

Convert = Callable[[Any], Any]
_PLAIN = frozenset({str, float, bool, type(None), Any, object, list, dict})
_JSON_SCALARS = (str, int, float, bool, type(None))


def _int_from_integral_float(value: Any) -> Any:
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _kind(annotation: Any) -> Literal["plain", "int", "convert"]:
    """How an argument for `annotation` gets from JSON to the function: as it
    is, as an int (JSON `3.0` is an integer), or through pydantic."""
    annotation = _strip_annotated(annotation)
    if annotation is int:
        return "int"
    try:
        if annotation in _PLAIN:
            return "plain"
    except TypeError:  # unhashable: not one of the plain types
        return "convert"
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        plain = all(type(a) in _JSON_SCALARS for a in args)
        return "plain" if plain else "convert"
    if origin in (list, dict):
        if origin is dict and args and _strip_annotated(args[0]) is not str:
            return "convert"
        return "plain" if all(_kind(a) == "plain" for a in args) else "convert"
    if origin is Union or origin is types.UnionType:
        kinds = {_kind(a) for a in args}
        if "convert" in kinds:
            return "convert"
        has_float = any(_strip_annotated(a) is float for a in args)
        return "int" if "int" in kinds and not has_float else "plain"
    return "convert"


def _converter(name: str, annotation: Any) -> Convert | None:
    kind = _kind(annotation)
    if kind == "plain":
        return None
    if kind == "int":
        return _int_from_integral_float
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(annotation)

    def convert(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except pydantic.ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in (name, *err['loc']))}: {err['msg']}"
                for err in e.errors()
            )
            raise ArgumentError(f"'{name}' is invalid: {problems}") from e

    return convert


def _handler(
    func: Callable[..., Any],
    parameters: Mapping[str, inspect.Parameter],
    context_name: str | None,
    *,
    is_async: bool,
) -> Handler:
    converters = tuple(
        (name, convert)
        for name, p in parameters.items()
        if (convert := _converter(name, p.annotation)) is not None
    )

    def arguments_for(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        kwargs = dict(arguments)
        for name, convert in converters:
            if name in kwargs:
                kwargs[name] = convert(kwargs[name])
        if context_name is not None:
            kwargs[context_name] = context
        return kwargs

    if is_async:
        if not converters and context_name is None:

            async def call_async_plain(arguments: Mapping[str, Any], context: ToolContext) -> Any:
                return await func(**arguments)

            return call_async_plain

        async def call_async(arguments: Mapping[str, Any], context: ToolContext) -> Any:
            return await func(**arguments_for(arguments, context))

        return call_async

    if not converters and context_name is None:

        def call_plain(arguments: Mapping[str, Any], context: ToolContext) -> Any:
            return func(**arguments)

        return call_plain

    def call(arguments: Mapping[str, Any], context: ToolContext) -> Any:
        return func(**arguments_for(arguments, context))

    return call


def _is_async(func: Callable[..., Any]) -> bool:
    """Coroutine functions, partials of them, and objects with an async __call__."""
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)
