"""Gemini function declarations.

Gemini's `parameters` is an OpenAPI 3.0 schema subset: no references, no
type arrays, no `additionalProperties`, enums of strings only, and the API
rejects a request over one unknown keyword. The conversion therefore keeps
only what Gemini understands and reports every loss that changes what the
model is told; the registry still validates arguments against the original
schema, so a loss makes the model less informed, never the tool less safe.
"""

from __future__ import annotations

import json
import re
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

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")

_KEPT = frozenset(
    {
        "description", "title", "nullable", "minItems", "maxItems",
        "minProperties", "maxProperties", "minLength", "maxLength", "pattern",
        "example", "propertyOrdering", "default", "minimum", "maximum",
    }
)  # fmt: skip

_SILENTLY_DROPPED = frozenset(
    {
        "$schema", "$id", "$comment", "$anchor", "$defs", "definitions", "deprecated",
        "readOnly", "writeOnly", "contentEncoding", "contentMediaType",
    }
)  # fmt: skip
"""Annotations and containers whose content is inlined: nothing is lost."""

FORMATS = {
    "string": frozenset({"enum", "date-time"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}
"""The only formats Gemini accepts; any other fails the request."""


def convert(definition: ToolDefinition) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The declaration, or None when Gemini cannot take the tool at all."""
    report = Report(definition.name)
    if not NAME.match(definition.name):
        report.add(
            "",
            "left out: Gemini function names must start with a letter or an underscore "
            "and use only letters, digits, '_', '.', ':' and '-' (at most 64 characters)",
        )
        return None, report.diagnostics
    root = input_schema(definition)
    parameters = _Converter(root, report).convert(root, "")
    declaration: dict[str, Any] = {"name": definition.name}
    if definition.description:
        declaration["description"] = definition.description
    # Gemini rejects an OBJECT with empty properties; for a function without
    # parameters the field is meant to be left unset.
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration, report.diagnostics


class _Converter:
    def __init__(self, root: JsonObject, report: Report) -> None:
        self.root = root
        self.report = report
        self.expanding: list[str] = []
        self.closed_reported = False

    def convert(self, node: Any, path: str) -> JsonObject:
        if node is True or node == {}:
            return {}
        if not isinstance(node, dict):
            self.report.add(path, "a schema that accepts nothing has no Gemini form; dropped")
            return {}
        if "$ref" in node:
            return self._reference(node, path)
        out: JsonObject = {}
        nullable = False
        branches: list[JsonObject] = []
        merged: list[JsonObject] = []
        for key, value in node.items():
            at = pointer(path, key)
            if key == "type":
                kinds = types_of(node)
                nullable = nullable or "null" in kinds
                kinds = [k for k in kinds if k != "null"]
                if len(kinds) == 1:
                    out["type"] = kinds[0]
                elif kinds:
                    branches.extend({"type": k} for k in kinds)
            elif key == "properties":
                out[key] = {name: self.convert(p, pointer(at, name)) for name, p in value.items()}
            elif key == "required":
                out[key] = list(value)
            elif key == "items":
                if isinstance(value, list):
                    self.report.add(at, "tuple items dropped: Gemini has no tuples")
                else:
                    out[key] = self.convert(value, at)
            elif key in ("anyOf", "oneOf"):
                if key == "oneOf":
                    self.report.add(
                        at,
                        "oneOf became anyOf: Gemini has no oneOf, so the model may match "
                        "several branches",
                    )
                for i, branch in enumerate(value):
                    if isinstance(branch, dict) and types_of(branch) == ["null"]:
                        nullable = True
                    else:
                        branches.append(self.convert(branch, pointer(at, i)))
            elif key == "allOf":
                merged.extend(self.convert(b, pointer(at, i)) for i, b in enumerate(value))
            elif key in ("enum", "const"):
                values = value if key == "enum" else [value]
                nullable = self._enum(values, node, out, at) or nullable
            elif key == "additionalProperties":
                self._additional_properties(value, at)
            elif key == "format":
                kind = next((k for k in types_of(node) if k != "null"), "string")
                if value in FORMATS.get(kind, ()):
                    out[key] = value
                else:
                    self.report.add(
                        at, f"format {value!r} dropped: Gemini accepts no such format for {kind}"
                    )
            elif key == "description":
                out.setdefault(key, value)  # an enum may have extended it already
            elif key == "examples":
                if isinstance(value, list) and value:
                    out.setdefault("example", value[0])
            elif key in _KEPT:
                out[key] = value
            elif key not in _SILENTLY_DROPPED:
                self.report.add(at, f"{key} dropped: Gemini does not support it")
        self._merge_branches(out, branches)
        for part in merged:
            self._merge(out, part, pointer(path, "allOf"))
        if nullable:
            out["nullable"] = True
        if "required" in out:
            out["required"] = [r for r in out["required"] if r in out.get("properties", {})]
            if not out["required"]:
                del out["required"]
        return out

    def _reference(self, node: JsonObject, path: str) -> JsonObject:
        ref = node["$ref"]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = resolve(self.root, ref) if isinstance(ref, str) else None
        if target is None:
            self.report.add(pointer(path, "$ref"), f"$ref {ref!r} cannot be resolved; dropped")
            return self.convert(siblings, path)
        if ref in self.expanding:
            self.report.add(
                path,
                f"recursive $ref {ref!r} cut here and replaced by a plain object: "
                "Gemini has no references",
            )
            return {"type": "object", **self.convert(siblings, path)}
        self.expanding.append(ref)
        try:
            inlined = self.convert(target, ref_pointer(ref) or "")
        finally:
            self.expanding.pop()
        return {**inlined, **self.convert(siblings, path)}

    def _enum(self, values: list[Any], node: JsonObject, out: JsonObject, path: str) -> bool:
        """Keep a string enum; move any other into the description, because
        Gemini only has string enums and stringified values would make the
        model send "3" where the tool expects 3. True when null is allowed."""
        present = [v for v in values if v is not None]
        if not present:
            pass
        elif all(isinstance(v, str) for v in present):
            out["enum"] = present
            if not types_of(node):
                out["type"] = "string"
        else:
            if not types_of(node):
                kinds = {json_type_of(v) for v in present}
                kinds = {"number"} if kinds == {"integer", "number"} else kinds
                if len(kinds) == 1:
                    out["type"] = kinds.pop()
            allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in present)
            described = node.get("description") or out.get("description")
            note = f"Allowed values: {allowed}."
            out["description"] = f"{described} {note}" if described else note
            self.report.add(
                path,
                "non-string enum moved into the description: Gemini enums hold strings only",
            )
        return len(present) < len(values)

    def _additional_properties(self, value: Any, path: str) -> None:
        if value is False:
            # Only strictness is lost; say it once per tool, not per object.
            if not self.closed_reported:
                self.closed_reported = True
                self.report.add(
                    path,
                    "additionalProperties: false dropped (here and in every other object): "
                    "Gemini cannot say that unknown arguments are refused",
                )
        else:
            self.report.add(
                path,
                "additionalProperties dropped: Gemini has no maps, so the model is not told "
                "which extra keys are allowed",
            )

    def _merge_branches(self, out: JsonObject, branches: list[JsonObject]) -> None:
        if len(branches) == 1:
            for key, value in branches[0].items():
                out.setdefault(key, value)
        elif branches:
            out["anyOf"] = branches

    def _merge(self, out: JsonObject, part: JsonObject, path: str) -> None:
        """allOf as one schema: properties and required add up, and on a
        conflict the enclosing schema's keyword wins."""
        for key, value in part.items():
            if key == "properties":
                out[key] = {**value, **out.get(key, {})}
            elif key == "required":
                out[key] = list(dict.fromkeys([*out.get(key, []), *value]))
            elif key not in out:
                out[key] = value
            elif out[key] != value and key not in ANNOTATIONS:
                self.report.add(path, f"allOf branches disagree on {key}; the first one is kept")
