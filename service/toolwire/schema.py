"""The two forms of a tool's input (parameter list and JSON Schema) and their checks.

Callers may give either form; the registry stores both so that every consumer
(validation, model formats, stubs, old clients) reads the one it prefers.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from .errors import InvalidDefinitionError
from .models import JsonObject, ParameterType, ToolDefinition, ToolParameter

_SIMPLE_TYPES = {t.value for t in ParameterType}
_SHAPING_KEYWORDS = ("type", "anyOf", "oneOf", "allOf", "$ref", "const")


def json_type_of(value: Any) -> str:
    """The JSON Schema type name of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def parameter_schema(parameter: ToolParameter) -> JsonObject:
    """The JSON Schema of one parameter: its simple fields plus the escape hatch."""
    schema: JsonObject = {}
    if not any(k in parameter.json_schema for k in _SHAPING_KEYWORDS):
        schema["type"] = parameter.type.value
    if parameter.description:
        schema["description"] = parameter.description
    if parameter.enum_values:
        schema["enum"] = list(parameter.enum_values)
    schema.update(parameter.json_schema)
    return schema


def input_schema_from_parameters(parameters: tuple[ToolParameter, ...]) -> JsonObject:
    """A closed object schema: unknown arguments are errors the model can correct."""
    return {
        "type": "object",
        "properties": {p.name: parameter_schema(p) for p in parameters},
        "required": [p.name for p in parameters if p.required],
        "additionalProperties": False,
    }


def _guess_type(prop: Any) -> ParameterType:
    if not isinstance(prop, dict):
        return ParameterType.OBJECT
    declared = prop.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), None)
    if isinstance(declared, str) and declared in _SIMPLE_TYPES:
        return ParameterType(declared)
    if "enum" in prop and all(isinstance(v, str) for v in prop["enum"]):
        return ParameterType.STRING
    for branch_key in ("anyOf", "oneOf", "allOf"):
        branches = prop.get(branch_key)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, dict) and branch.get("type") not in (None, "null"):
                    return _guess_type(branch)
    if "items" in prop:
        return ParameterType.ARRAY
    if "const" in prop and isinstance(prop["const"], str):
        return ParameterType.STRING
    return ParameterType.OBJECT


def parameters_from_input_schema(schema: JsonObject) -> tuple[ToolParameter, ...]:
    """The top-level properties as parameters; what the simple form cannot say
    stays in each parameter's `json_schema`."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    parameters = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = _guess_type(prop)
        enum = prop.get("enum")
        simple_enum = (
            kind is ParameterType.STRING
            and prop.get("type") == "string"
            and isinstance(enum, list)
            and all(isinstance(v, str) for v in enum)
        )
        extra = {
            k: v
            for k, v in prop.items()
            if k != "description"
            and not (k == "type" and v == kind.value)
            and not (k == "enum" and simple_enum)
        }
        parameters.append(
            ToolParameter(
                name=name,
                type=kind,
                description=str(prop.get("description", "")),
                required=name in required,
                enum_values=tuple(enum) if simple_enum and enum else (),
                json_schema=extra,
            )
        )
    return tuple(parameters)


def _check_parameters(parameters: tuple[ToolParameter, ...]) -> None:
    seen: set[str] = set()
    for p in parameters:
        if not p.name:
            raise InvalidDefinitionError("a parameter has an empty name")
        if p.name in seen:
            raise InvalidDefinitionError(f"parameter '{p.name}' is declared twice")
        seen.add(p.name)
        if p.enum_values and p.type is not ParameterType.STRING:
            raise InvalidDefinitionError(
                f"parameter '{p.name}' has enum_values but type {p.type.value}; "
                "enum_values are for string parameters (use json_schema.enum for others)"
            )


def check_json_schema(schema: Any, what: str) -> None:
    """Raise InvalidDefinitionError unless `schema` is a usable JSON Schema."""
    if not isinstance(schema, dict):
        raise InvalidDefinitionError(f"{what} must be a JSON object")
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as e:
        raise InvalidDefinitionError(f"{what} is not a valid JSON Schema: {_first_line(e)}") from e
    except jsonschema_rs.ReferencingError as e:
        raise InvalidDefinitionError(f"{what} is not a valid JSON Schema: {e}") from e
    try:
        jsonschema_rs.validator_for(schema)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as e:
        raise InvalidDefinitionError(f"{what} cannot be compiled: {_first_line(e)}") from e


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0]


def _check_input_schema(schema: JsonObject) -> None:
    check_json_schema(schema, "input_schema")
    if schema.get("type") != "object":
        raise InvalidDefinitionError(
            'input_schema must describe an object of arguments ("type": "object"), '
            f"got type {schema.get('type')!r}"
        )
    properties = schema.get("properties") or {}
    open_object = (
        schema.get("additionalProperties", True) is not False or "patternProperties" in schema
    )
    missing = [r for r in schema.get("required") or () if r not in properties]
    if missing and not open_object:
        raise InvalidDefinitionError(
            f"input_schema requires {', '.join(repr(m) for m in missing)} but does not define "
            "it under properties, so no call could ever be valid"
        )


def _check_agreement(given: tuple[ToolParameter, ...], derived: tuple[ToolParameter, ...]) -> None:
    given_map = {p.name: p for p in given}
    derived_map = {p.name: p for p in derived}
    if given_map.keys() != derived_map.keys():
        raise InvalidDefinitionError(
            "parameters and input_schema disagree on which arguments exist: "
            f"parameters name {sorted(given_map)}, input_schema names {sorted(derived_map)}; "
            "give one form and the registry derives the other"
        )
    for name, p in given_map.items():
        if p.required != derived_map[name].required:
            raise InvalidDefinitionError(
                f"parameters and input_schema disagree on whether '{name}' is required"
            )


def _ordered_like(schema: JsonObject, parameters: tuple[ToolParameter, ...]) -> JsonObject:
    """Properties in the order of the parameter list: the order a model reads
    them in, which a schema that crossed the wire as a map has lost."""
    properties = schema.get("properties") or {}
    ordered = {p.name: properties[p.name] for p in parameters if p.name in properties}
    return {**schema, "properties": ordered}


def normalize_definition(definition: ToolDefinition) -> ToolDefinition:
    """Check a definition and fill in whichever input form is missing."""
    normalized = _normalize_inputs(definition)
    _check_command_argument(normalized)
    return normalized


def _check_command_argument(definition: ToolDefinition) -> None:
    """A command-running tool's command must be a required string argument:
    exec approvals decide on it, so it cannot be missing or of another type."""
    name = definition.command_argument
    if not name:
        return
    parameter = next((p for p in definition.parameters if p.name == name), None)
    if parameter is None or parameter.type is not ParameterType.STRING or not parameter.required:
        raise InvalidDefinitionError(
            f"command_argument '{name}' must name a required string parameter of "
            f"'{definition.name}'"
        )


def _normalize_inputs(definition: ToolDefinition) -> ToolDefinition:
    _check_parameters(definition.parameters)
    if definition.output_schema is not None:
        check_json_schema(definition.output_schema, "output_schema")
    if definition.input_schema is None:
        schema = input_schema_from_parameters(definition.parameters)
        check_json_schema(schema, "the schema derived from parameters")
        return definition.model_copy(update={"input_schema": schema})
    _check_input_schema(definition.input_schema)
    derived = parameters_from_input_schema(definition.input_schema)
    if definition.parameters:
        _check_agreement(definition.parameters, derived)
        return definition.model_copy(
            update={"input_schema": _ordered_like(definition.input_schema, definition.parameters)}
        )
    return definition.model_copy(update={"parameters": derived})
