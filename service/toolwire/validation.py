"""Arguments in, validated arguments or an LLM-readable complaint out.

Models make mistakes a program would not: they send `"[1, 2]"` where an
array belongs and `null` for an optional field (OpenAI strict mode asks them
to). The fast path validates as given; only a failing call pays for the lenient
second look, and the messages name the field so the model can fix its call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema_rs

from .models import JsonObject
from .schema import json_type_of

MAX_REPORTED_ERRORS = 5


class ArgumentError(ValueError):
    """Arguments that cannot be used; the message is written for the model.

    A handler may raise it too, for a rule its schema cannot express: the call
    then fails as invalid arguments rather than as a handler error.
    """


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_arguments(raw: str | Mapping[str, Any] | None, max_bytes: int) -> JsonObject:
    """The arguments as a dict. Raises ArgumentError."""
    if not isinstance(raw, str):
        return {} if raw is None else dict(raw)
    if len(raw) > max_bytes or len(raw.encode()) > max_bytes:
        raise ArgumentError(
            f"arguments are {len(raw.encode()):,} bytes of JSON; the limit is {max_bytes:,} bytes"
        )
    if not raw.strip():
        return {}
    try:
        value = _DECODER.decode(raw)
    except json.JSONDecodeError as e:
        raise ArgumentError(
            f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from e
    except ValueError as e:
        raise ArgumentError(f"arguments are not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise ArgumentError(
            f"arguments must be a JSON object of named fields, got {_json_kind(value)}"
        )
    return value


def _json_kind(value: Any) -> str:
    kind = json_type_of(value)
    return kind if kind == "null" else _article(kind)


def _field(path: list[str | int], leaf: str | None = None) -> str:
    parts = [*path, leaf] if leaf is not None else list(path)
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    text = f"'{value}'" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(error: jsonschema_rs.ValidationError, schema: JsonObject) -> str:
    kind = error.kind
    path = list(error.instance_path)
    where = _field(path)
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        return f"missing required field '{_field(path, str(kind.property))}'"
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        names = ", ".join(f"'{_field(path, str(n))}'" for n in kind.unexpected)
        known = list((schema.get("properties") or {}).keys()) if not path else []
        hint = f" (known fields: {', '.join(known)})" if known else ""
        return f"unexpected field {names}{hint}"
    subject = f"'{where}'" if where else "arguments"
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
        options = ", ".join(str(o) if isinstance(o, str) else _shown(o) for o in kind.options)
        return f"{subject} must be one of {options}; got {_shown(error.instance)}"
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Type):
        wanted = " or ".join(_article(str(t)) for t in kind.types)
        got = _json_kind(error.instance)
        return f"{subject} must be {wanted}; got {_shown(error.instance)} ({got})"
    if isinstance(
        kind,
        jsonschema_rs.ValidationErrorKind.AnyOf | jsonschema_rs.ValidationErrorKind.OneOfNotValid,
    ):
        return _describe_alternatives(subject, kind.as_dict()["context"], schema)
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Constant):
        return f"{subject} must be {_shown(kind.expected_value)}; got {_shown(error.instance)}"
    return f"{subject}: {error.message}"


def _only_not_null(branch: list[jsonschema_rs.ValidationError]) -> bool:
    return all(
        isinstance(e.kind, jsonschema_rs.ValidationErrorKind.Type)
        and list(e.kind.types) == ["null"]
        for e in branch
    )


def _describe_alternatives(
    subject: str, branches: list[list[jsonschema_rs.ValidationError]], schema: JsonObject
) -> str:
    """`X | None` is how optional fields are often written; a model sending a
    wrong X should hear what X wants, not that no branch of an anyOf matched."""
    relevant = [b for b in branches if b and not _only_not_null(b)]
    if len(relevant) == 1:
        return _describe(relevant[0][0], schema)
    reasons = " or ".join(dict.fromkeys(_describe(b[0], schema) for b in relevant))
    return f"{subject} matches none of the allowed forms: {reasons}"


def _article(type_name: str) -> str:
    return f"an {type_name}" if type_name[0] in "aeiou" else f"a {type_name}"


def _allows(schema: Any, json_type: str) -> bool:
    if not isinstance(schema, dict):
        return False
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared == json_type or (json_type == "integer" and declared == "number")
    if isinstance(declared, list):
        return json_type in declared
    return any(_allows(b, json_type) for k in ("anyOf", "oneOf") for b in schema.get(k) or ())


def lenient(instance: Any, schema: Any) -> Any:
    """A copy with JSON-text arrays/objects parsed and nulls on optional fields
    dropped, wherever the schema shows that is what the model meant."""
    if not isinstance(schema, dict):
        return instance
    if isinstance(instance, dict):
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        fixed: JsonObject = {}
        for key, value in instance.items():
            prop = properties.get(key)
            if value is None and key not in required and prop and not _allows(prop, "null"):
                continue
            fixed[key] = lenient(_parse_embedded(value, prop), prop)
        return fixed
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [lenient(_parse_embedded(v, schema["items"]), schema["items"]) for v in instance]
    return instance


def _parse_embedded(value: Any, schema: Any) -> Any:
    if not isinstance(value, str) or _allows(schema, "string"):
        return value
    wants_array, wants_object = _allows(schema, "array"), _allows(schema, "object")
    if not (wants_array or wants_object):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if (wants_array and isinstance(parsed, list)) or (wants_object and isinstance(parsed, dict)):
        return parsed
    return value


class ArgumentValidator:
    """A tool's input schema, compiled once at registration."""

    __slots__ = ("_schema", "_validator")

    def __init__(self, schema: JsonObject) -> None:
        self._schema = schema
        self._validator = jsonschema_rs.validator_for(schema)

    def check(self, arguments: JsonObject) -> JsonObject:
        """The arguments to run with. Raises ArgumentError naming every problem
        (up to a few) in words a model can act on."""
        if self._validator.is_valid(arguments):
            return arguments
        fixed = lenient(arguments, self._schema)
        if fixed != arguments and self._validator.is_valid(fixed):
            return fixed  # type: ignore[no-any-return]
        problems = []
        for error in self._validator.iter_errors(fixed):
            problems.append(_describe(error, self._schema))
            if len(problems) == MAX_REPORTED_ERRORS:
                break
        raise ArgumentError("; ".join(dict.fromkeys(problems)))
