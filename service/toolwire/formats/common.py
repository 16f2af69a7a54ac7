"""What every format shares: the result types and JSON Schema plumbing.

Converters report what they could not carry over as `Diagnostic`s instead of
raising: a tool that loses a constraint in one model's dialect is still worth
offering, and the registry validates arguments against the original schema
anyway, so the caller decides whether a loss matters.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict

from toolwire.models import JsonObject, ToolDefinition
from toolwire.schema import input_schema_from_parameters

ANNOTATIONS = frozenset({"title", "description"})
"""Keywords that describe a schema to the model without constraining values."""


class Diagnostic(BaseModel):
    """Something a conversion changed or could not do, said for a human."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool_name: str
    path: str
    """JSON pointer into the tool's input schema; "" for the tool itself."""
    message: str


class ModelTools(BaseModel):
    """Tools in one model API's format, and what the conversion had to say."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: list[dict[str, Any]]
    diagnostics: list[Diagnostic]


class Report:
    """Collects one tool's diagnostics; converters stay free of bookkeeping."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self.diagnostics: list[Diagnostic] = []

    def add(self, path: str, message: str) -> None:
        diagnostic = Diagnostic(tool_name=self.tool_name, path=path, message=message)
        # An inlined definition is converted once per reference; say it once.
        if diagnostic not in self.diagnostics:
            self.diagnostics.append(diagnostic)


def input_schema(definition: ToolDefinition) -> JsonObject:
    """A private copy of the input schema, so converters may change it freely."""
    if definition.input_schema is None:
        return input_schema_from_parameters(definition.parameters)
    return copy.deepcopy(definition.input_schema)


def pointer(base: str, *tokens: str | int) -> str:
    """`base` extended by `tokens`, escaped as RFC 6901 requires."""
    escaped = (str(t).replace("~", "~0").replace("/", "~1") for t in tokens)
    return "".join([base, *(f"/{t}" for t in escaped)])


def ref_pointer(ref: str) -> str | None:
    """The JSON pointer a local `$ref` names, or None for anything else
    (remote documents, anchors): those cannot be inlined or checked here."""
    if not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return None
    return fragment


def resolve(root: Any, ref: str) -> Any | None:
    """The schema a local `$ref` points to within `root`, or None."""
    fragment = ref_pointer(ref)
    if fragment is None:
        return None
    node = root
    for raw in fragment.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def types_of(schema: JsonObject) -> list[str]:
    """The declared JSON types, as a list whether `type` is a string or an array."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []
