"""OpenAI function tools (Chat Completions and Responses), with strict mode.

Strict mode makes the model's arguments match the schema by construction, but
the API accepts only a subset of JSON Schema and rejects the whole request
when a tool's schema falls outside it. So a schema is rewritten into that
subset when the rewrite keeps its meaning (close every object, turn optional
into nullable, drop what only loosens it), and otherwise sent unchanged with
strict=false: a tool without strict mode works; a rejected request does not.

Loosening is safe because the registry validates arguments against the
original schema (and drops the nulls strict mode makes the model send for
optional fields) before any handler runs.
"""

from __future__ import annotations

from typing import Any

from toolwire.models import JsonObject, ToolDefinition
from toolwire.schema import json_type_of

from .common import (
    ANNOTATIONS,
    Diagnostic,
    Report,
    input_schema,
    pointer,
    ref_pointer,
    resolve,
    types_of,
)

MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000
MAX_STRING_CHARS = 120_000
"""Property names, definition names and enum values, all together."""
LARGE_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000

SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

_KEPT = frozenset(
    {
        "type", "enum", "description", "title", "pattern",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "minItems", "maxItems",
    }
)  # fmt: skip

_SILENTLY_DROPPED = frozenset(
    {
        "$schema", "$id", "$comment", "$anchor", "default", "examples", "example",
        "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType",
    }
)  # fmt: skip
"""Annotations strict mode may reject; without them the arguments mean the same."""

_BLOCKING = {
    "allOf": "allOf is not supported in strict mode",
    "not": "not is not supported in strict mode",
    "if": "if/then/else is not supported in strict mode",
    "then": "if/then/else is not supported in strict mode",
    "else": "if/then/else is not supported in strict mode",
    "dependentRequired": "dependentRequired is not supported in strict mode",
    "dependentSchemas": "dependentSchemas is not supported in strict mode",
    "dependencies": "dependencies is not supported in strict mode",
    "unevaluatedProperties": "unevaluatedProperties is not supported in strict mode",
    "patternProperties": "patternProperties (keys matched by a pattern) cannot be closed",
    "prefixItems": "tuples (prefixItems) are not supported in strict mode",
    "additionalItems": "tuples (additionalItems) are not supported in strict mode",
    "$dynamicRef": "$dynamicRef is not supported in strict mode",
    "$recursiveRef": "$recursiveRef is not supported in strict mode",
}
"""Keywords whose meaning strict mode cannot express and that are unsafe to drop."""

_DEFINITIONS = ("$defs", "definitions")


def chat_completions(definition: ToolDefinition) -> tuple[dict[str, Any], list[Diagnostic]]:
    function, diagnostics = _function(definition)
    return {"type": "function", "function": function}, diagnostics


def responses(definition: ToolDefinition) -> tuple[dict[str, Any], list[Diagnostic]]:
    function, diagnostics = _function(definition)
    return {"type": "function", **function}, diagnostics


def _function(definition: ToolDefinition) -> tuple[dict[str, Any], list[Diagnostic]]:
    original = input_schema(definition)
    parameters, strict, diagnostics = strict_schema(original, definition.name)
    function: dict[str, Any] = {"name": definition.name}
    if definition.description:
        function["description"] = definition.description
    function["parameters"] = parameters
    function["strict"] = strict
    return function, diagnostics


def strict_schema(schema: JsonObject, tool_name: str) -> tuple[JsonObject, bool, list[Diagnostic]]:
    """The strict-mode rewrite of `schema` and True, or `schema` itself and
    False with the reasons; `schema` is not modified either way."""
    rewriter = _StrictRewriter(schema, tool_name)
    if types_of(schema) != ["object"] or "anyOf" in schema or "oneOf" in schema:
        rewriter.blockers.add("", "the root of the schema must be a plain object")
        strict = schema
    else:
        strict = rewriter.rewrite(schema, "", 1)
        rewriter.check_limits(strict)
    if rewriter.blockers.diagnostics:
        return schema, False, rewriter.blockers.diagnostics
    return strict, True, rewriter.notes.diagnostics


class _StrictRewriter:
    def __init__(self, root: JsonObject, tool_name: str) -> None:
        self.root = root
        self.blockers = Report(tool_name)
        self.notes = Report(tool_name)
        self.inlining: list[str] = []

    def block(self, path: str, reason: str) -> None:
        self.blockers.add(path, f"strict mode not possible, sent with strict=false: {reason}")

    def rewrite(self, node: Any, path: str, depth: int) -> Any:
        if not isinstance(node, dict):
            self.block(path, "boolean schemas are not supported in strict mode")
            return node
        node = _without_single_all_of(node)
        is_object = (
            "object" in types_of(node) or "properties" in node or "additionalProperties" in node
        )
        if depth > MAX_DEPTH and (is_object or "array" in types_of(node) or "items" in node):
            # How the API counts levels is not documented; counting arrays
            # as well as objects errs on the side of strict=false.
            self.block(path, f"objects and arrays nest deeper than {MAX_DEPTH} levels")
            return node
        if "anyOf" in node and "oneOf" in node:
            self.block(path, "anyOf and oneOf together cannot be expressed as one anyOf")
        out: JsonObject = {"type": "object"} if is_object and "type" not in node else {}
        for key, value in node.items():
            at = pointer(path, key)
            if key in _BLOCKING:
                self.block(at, _BLOCKING[key])
            elif key == "properties":
                out[key] = self._properties(value, set(node.get("required", ())), at, depth)
            elif key == "required":
                out[key] = list(node.get("properties", {}))
            elif key == "additionalProperties":
                if value is not False:
                    self.block(at, "an object with additionalProperties (a map) cannot be closed")
                out[key] = False
            elif key == "items":
                out[key] = self._items(value, at, depth)
            elif key in ("anyOf", "oneOf"):
                if key == "oneOf":
                    self.notes.add(at, "oneOf became anyOf: strict mode has no oneOf")
                out["anyOf"] = [self.rewrite(b, pointer(at, i), depth) for i, b in enumerate(value)]
            elif key in _DEFINITIONS:
                out[key] = {
                    name: self.rewrite(d, pointer(at, name), 1) for name, d in value.items()
                }
            elif key == "$ref":
                out[key] = value
                self._check_ref(value, at)
            elif key == "const":
                out["enum"] = [value]
            elif key == "format":
                if value in SUPPORTED_FORMATS:
                    out[key] = value
                else:
                    self.notes.add(at, f"format {value!r} dropped: strict mode does not support it")
            elif key in _KEPT:
                out[key] = value
            elif key not in _SILENTLY_DROPPED:
                self.notes.add(at, f"{key} dropped: strict mode does not support it")
        if is_object:
            if "additionalProperties" not in node and not node.get("properties"):
                self.block(
                    path, "an object without properties accepts any keys and cannot be closed"
                )
            out.setdefault("properties", {})
            out.setdefault("required", list(out["properties"]))
            out["additionalProperties"] = False
        if "enum" in out and "type" not in out:
            out["type"] = _types_for(out["enum"])
        if "$ref" in out and len(out) > 1:
            return self._inline(out, path, depth)
        if not any(k in out for k in ("type", "anyOf", "$ref")):
            self.block(path, "a schema without a type (any value) is not supported in strict mode")
        return out

    def _properties(self, properties: Any, required: set[str], path: str, depth: int) -> Any:
        return {
            name: self.rewrite(
                prop if name in required else _nullable(prop), pointer(path, name), depth + 1
            )
            for name, prop in properties.items()
        }

    def _items(self, items: Any, path: str, depth: int) -> Any:
        if isinstance(items, list):
            self.block(path, "tuples (items as an array) are not supported in strict mode")
            return items
        return self.rewrite(items, path, depth + 1)

    def _check_ref(self, ref: Any, path: str) -> None:
        fragment = ref_pointer(ref) if isinstance(ref, str) else None
        parts = (fragment or "").split("/")
        local = fragment == "" or (len(parts) == 3 and parts[1] in _DEFINITIONS)
        if fragment is None or not local or resolve(self.root, ref) is None:
            self.block(path, f"$ref {ref!r} is not a reference to the root or to $defs")

    def _inline(self, out: JsonObject, path: str, depth: int) -> Any:
        """Strict mode rejects a $ref with sibling keywords (such as a
        description), so the referenced schema takes the $ref's place."""
        ref = out.pop("$ref")
        if ref in self.inlining:
            if set(out) <= ANNOTATIONS:
                self.notes.add(
                    path,
                    "description of a recursive $ref dropped: strict mode allows no keywords "
                    "beside $ref",
                )
                return {"$ref": ref}
            self.block(path, "a recursive $ref with sibling keywords cannot be inlined")
            return {"$ref": ref, **out}
        target = resolve(self.root, ref)
        self.inlining.append(ref)
        try:
            inlined = self.rewrite(target, ref_pointer(ref) or "", depth)
        finally:
            self.inlining.pop()
        if not isinstance(inlined, dict):
            return inlined
        return {**inlined, **out}

    def check_limits(self, schema: JsonObject) -> None:
        totals = _Totals()
        totals.visit(schema)
        if totals.properties > MAX_PROPERTIES:
            self.block("", f"{totals.properties} properties exceed the limit of {MAX_PROPERTIES}")
        if totals.enum_values > MAX_ENUM_VALUES:
            self.block(
                "", f"{totals.enum_values} enum values exceed the limit of {MAX_ENUM_VALUES}"
            )
        if totals.chars > MAX_STRING_CHARS:
            self.block(
                "",
                f"names and enum values total {totals.chars} characters, "
                f"over the limit of {MAX_STRING_CHARS}",
            )
        if totals.large_enum_chars > MAX_LARGE_ENUM_CHARS:
            self.block(
                "",
                f"an enum of more than {LARGE_ENUM} values totals "
                f"{totals.large_enum_chars} characters, over {MAX_LARGE_ENUM_CHARS}",
            )


class _Totals:
    """The sizes strict mode limits, summed over a rewritten schema."""

    def __init__(self) -> None:
        self.properties = 0
        self.enum_values = 0
        self.chars = 0
        self.large_enum_chars = 0

    def visit(self, node: Any) -> None:
        if not isinstance(node, dict):
            return
        properties = node.get("properties", {})
        self.properties += len(properties)
        self.chars += sum(len(name) for name in properties)
        enum = node.get("enum", [])
        strings = sum(len(v) for v in enum if isinstance(v, str))
        self.enum_values += len(enum)
        self.chars += strings
        if len(enum) > LARGE_ENUM:
            self.large_enum_chars = max(self.large_enum_chars, strings)
        for key in _DEFINITIONS:
            self.chars += sum(len(name) for name in node.get(key, {}))
            for definition in node.get(key, {}).values():
                self.visit(definition)
        for child in [*properties.values(), node.get("items"), *node.get("anyOf", [])]:
            self.visit(child)


def _nullable(prop: Any) -> Any:
    """An optional property as strict mode spells it: required, but null allowed."""
    if not isinstance(prop, dict):
        return prop
    prop = dict(prop)
    if "const" in prop and "enum" not in prop:
        prop["enum"] = [prop.pop("const")]
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    kinds = types_of(prop)
    if kinds:
        if "null" not in kinds:
            prop["type"] = [*kinds, "null"]
        return prop
    if "enum" in prop:
        return prop
    for key in ("anyOf", "oneOf"):
        if key in prop and set(prop) <= {key, "default", *ANNOTATIONS}:
            if not any(isinstance(b, dict) and "null" in types_of(b) for b in prop[key]):
                prop[key] = [*prop[key], {"type": "null"}]
            return prop
    outer = {k: prop.pop(k) for k in ("title", "description") if k in prop}
    return {**outer, "anyOf": [prop, {"type": "null"}]}


def _without_single_all_of(node: JsonObject) -> JsonObject:
    """`{"allOf": [X], "description": …}` is X with a description: generators
    write it to describe a reference, and it needs no allOf to say so."""
    branches = node.get("allOf")
    rest = {k: v for k, v in node.items() if k != "allOf"}
    if isinstance(branches, list) and len(branches) == 1 and set(rest) <= ANNOTATIONS:
        branch = branches[0]
        if isinstance(branch, dict):
            return {**branch, **rest}
    return node


def _types_for(values: list[Any]) -> str | list[str]:
    kinds = list(dict.fromkeys(json_type_of(v) for v in values))
    if set(kinds) == {"integer", "number"}:
        kinds = ["number"]
    return kinds[0] if len(kinds) == 1 else kinds
