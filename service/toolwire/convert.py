"""The one mapping between the core's models and toolwire.v1's messages.

The servicers and the Python client both translate through here, so a field
added to the contract is mapped once. Struct numbers are doubles on the wire;
integral ones come back as ints so that schemas read `"maxLength": 64`.
"""

from __future__ import annotations

import functools
import json
from typing import Any, TypedDict, TypeVar

from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2

from .events import EventKind, RegistryEvent
from .formats import ModelTools
from .models import (
    ApprovalState,
    ApprovalTicket,
    CallContext,
    ErrorCode,
    JsonObject,
    ModelFormat,
    ParameterType,
    Runtime,
    SafetyTier,
    SandboxPlacement,
    ToolDefinition,
    ToolParameter,
    ToolResult,
)
from .registry import ListPage
from .v1 import registry_service_pb2 as rpb
from .v1 import tool_pb2 as pb

_K = TypeVar("_K")

_PARAMETER_TYPES = {
    ParameterType.STRING: pb.PARAMETER_TYPE_STRING,
    ParameterType.NUMBER: pb.PARAMETER_TYPE_NUMBER,
    ParameterType.INTEGER: pb.PARAMETER_TYPE_INTEGER,
    ParameterType.BOOLEAN: pb.PARAMETER_TYPE_BOOLEAN,
    ParameterType.OBJECT: pb.PARAMETER_TYPE_OBJECT,
    ParameterType.ARRAY: pb.PARAMETER_TYPE_ARRAY,
}
_TIERS = {
    SafetyTier.READ_ONLY: pb.SAFETY_TIER_READ_ONLY,
    SafetyTier.SIDE_EFFECTING: pb.SAFETY_TIER_SIDE_EFFECTING,
    SafetyTier.PRIVILEGED: pb.SAFETY_TIER_PRIVILEGED,
}
_ERROR_CODES = {
    ErrorCode.NOT_FOUND: pb.ERROR_CODE_NOT_FOUND,
    ErrorCode.INVALID_ARGUMENTS: pb.ERROR_CODE_INVALID_ARGUMENTS,
    ErrorCode.DENIED_BY_POLICY: pb.ERROR_CODE_DENIED_BY_POLICY,
    ErrorCode.APPROVAL_REQUIRED: pb.ERROR_CODE_APPROVAL_REQUIRED,
    ErrorCode.TIMEOUT: pb.ERROR_CODE_TIMEOUT,
    ErrorCode.HANDLER_ERROR: pb.ERROR_CODE_HANDLER_ERROR,
    ErrorCode.PROVIDER_UNAVAILABLE: pb.ERROR_CODE_PROVIDER_UNAVAILABLE,
    ErrorCode.RESOURCE_EXHAUSTED: pb.ERROR_CODE_RESOURCE_EXHAUSTED,
    ErrorCode.CANCELLED: pb.ERROR_CODE_CANCELLED,
}
_RUNTIMES = {
    Runtime.HOST: pb.RUNTIME_HOST,
    Runtime.DENO: pb.RUNTIME_DENO,
    Runtime.PROVIDER: pb.RUNTIME_PROVIDER,
}
_APPROVAL_STATES = {
    ApprovalState.PENDING: pb.APPROVAL_STATE_PENDING,
    ApprovalState.APPROVED: pb.APPROVAL_STATE_APPROVED,
    ApprovalState.DENIED: pb.APPROVAL_STATE_DENIED,
    ApprovalState.USED: pb.APPROVAL_STATE_USED,
    ApprovalState.EXPIRED: pb.APPROVAL_STATE_EXPIRED,
}
_FORMATS = {
    ModelFormat.ANTHROPIC: rpb.MODEL_FORMAT_ANTHROPIC,
    ModelFormat.OPENAI_CHAT: rpb.MODEL_FORMAT_OPENAI_CHAT,
    ModelFormat.OPENAI_RESPONSES: rpb.MODEL_FORMAT_OPENAI_RESPONSES,
    ModelFormat.GEMINI: rpb.MODEL_FORMAT_GEMINI,
    ModelFormat.MCP: rpb.MODEL_FORMAT_MCP,
}


def _inverse(mapping: dict[_K, Any]) -> dict[int, _K]:
    return {int(v): k for k, v in mapping.items()}


_PARAMETER_TYPES_IN = _inverse(_PARAMETER_TYPES)
_TIERS_IN = _inverse(_TIERS)
_ERROR_CODES_IN = _inverse(_ERROR_CODES)
_FORMATS_IN = _inverse(_FORMATS)
_RUNTIMES_IN = _inverse(_RUNTIMES)
_APPROVAL_STATES_IN = _inverse(_APPROVAL_STATES)


class ConversionError(ValueError):
    """A message whose content cannot become a core model (a malformed request)."""


def _integral(value: Any) -> Any:
    """Integral doubles back to ints, and keys sorted: a Struct is a map, so the
    order it arrives in is the transport's, and sorting makes it deterministic."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def struct_to_dict(message: struct_pb2.Struct) -> JsonObject:
    return _integral(json_format.MessageToDict(message))  # type: ignore[no-any-return]


def dict_to_struct(data: JsonObject) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    json_format.ParseDict(data, message)
    return message


def value_to_python(message: struct_pb2.Value) -> Any:
    return _integral(json_format.MessageToDict(message))


def python_to_value(data: Any) -> struct_pb2.Value:
    message = struct_pb2.Value()
    json_format.ParseDict(data, message)
    return message


def seconds_to_duration(seconds: float) -> duration_pb2.Duration:
    message = duration_pb2.Duration()
    message.FromNanoseconds(round(seconds * 1e9))
    return message


def duration_to_seconds(message: duration_pb2.Duration) -> float:
    return float(message.seconds + message.nanos / 1e9)


def parameter_to_proto(parameter: ToolParameter) -> pb.ToolParameter:
    message = pb.ToolParameter(
        name=parameter.name,
        type=_PARAMETER_TYPES[parameter.type],
        description=parameter.description,
        required=parameter.required,
        enum_values=parameter.enum_values,
    )
    if parameter.json_schema:
        message.json_schema.CopyFrom(dict_to_struct(parameter.json_schema))
    return message


def parameter_from_proto(message: pb.ToolParameter) -> ToolParameter:
    kind = _PARAMETER_TYPES_IN.get(message.type)
    if kind is None:
        raise ConversionError(
            f"parameter '{message.name}' needs a type (string, number, integer, boolean, "
            "object or array)"
        )
    return ToolParameter(
        name=message.name,
        type=kind,
        description=message.description,
        required=message.required,
        enum_values=tuple(message.enum_values),
        json_schema=struct_to_dict(message.json_schema) if message.HasField("json_schema") else {},
    )


def definition_to_proto(definition: ToolDefinition) -> pb.ToolDefinition:
    message = pb.ToolDefinition(
        name=definition.name,
        description=definition.description,
        parameters=[parameter_to_proto(p) for p in definition.parameters],
        safety_tier=_TIERS[definition.safety_tier],
        group=definition.group,
        labels=definition.labels,
        requires_approval=definition.requires_approval,
        command_argument=definition.command_argument,
        max_concurrency=definition.max_concurrency,
    )
    if definition.input_schema is not None:
        message.input_schema.CopyFrom(dict_to_struct(definition.input_schema))
        message.input_schema_json = json.dumps(definition.input_schema, ensure_ascii=False)
    if definition.output_schema is not None:
        message.output_schema.CopyFrom(dict_to_struct(definition.output_schema))
        message.output_schema_json = json.dumps(definition.output_schema, ensure_ascii=False)
    if definition.timeout_seconds is not None:
        message.timeout.CopyFrom(seconds_to_duration(definition.timeout_seconds))
    return message


def _schema(message: pb.ToolDefinition, field: str) -> JsonObject | None:
    """The JSON text form when given (it keeps key order), else the Struct."""
    text: str = getattr(message, f"{field}_json")
    if text:
        try:
            schema = json.loads(text)
        except ValueError as e:
            raise ConversionError(
                f"tool '{message.name}': {field}_json is not valid JSON: {e}"
            ) from e
        if not isinstance(schema, dict):
            raise ConversionError(f"tool '{message.name}': {field}_json must be a JSON object")
        return schema
    if message.HasField(field):
        return struct_to_dict(getattr(message, field))
    return None


def definition_from_proto(message: pb.ToolDefinition) -> ToolDefinition:
    """Raises ConversionError with a caller-readable reason for bad content."""
    timeout = duration_to_seconds(message.timeout) if message.HasField("timeout") else None
    if timeout is not None and timeout <= 0:
        raise ConversionError(f"tool '{message.name}': timeout must be positive, got {timeout}s")
    try:
        return ToolDefinition(
            name=message.name,
            description=message.description,
            parameters=tuple(parameter_from_proto(p) for p in message.parameters),
            input_schema=_schema(message, "input_schema"),
            output_schema=_schema(message, "output_schema"),
            safety_tier=_TIERS_IN.get(message.safety_tier, SafetyTier.SIDE_EFFECTING),
            group=message.group,
            timeout_seconds=timeout,
            labels=dict(message.labels),
            requires_approval=message.requires_approval,
            command_argument=message.command_argument,
            max_concurrency=message.max_concurrency,
        )
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        raise ConversionError(f"tool '{message.name}': {e}") from e


def context_to_proto(context: CallContext) -> pb.CallContext:
    return pb.CallContext(
        caller_id=context.caller_id, session_id=context.session_id, user_id=context.user_id
    )


_EMPTY_CONTEXT = CallContext()


def context_from_proto(message: pb.CallContext) -> CallContext:
    if not (message.caller_id or message.session_id or message.user_id):
        return _EMPTY_CONTEXT
    return _context(message.caller_id, message.session_id, message.user_id)


@functools.lru_cache(maxsize=4096)
def _context(caller_id: str, session_id: str, user_id: str) -> CallContext:
    """Callers repeat themselves; a validated model per call is measurable."""
    return CallContext(caller_id=caller_id, session_id=session_id, user_id=user_id)


def result_to_proto(result: ToolResult) -> pb.ToolResult:
    message = pb.ToolResult(
        success=result.success,
        output=result.output,
        error=result.error,
        error_code=_ERROR_CODES[result.error_code]
        if result.error_code
        else pb.ERROR_CODE_UNSPECIFIED,
        truncated=result.truncated,
        original_size_bytes=result.original_size_bytes,
        duration=seconds_to_duration(result.duration_seconds),
    )
    if result.structured_output is not None:
        message.structured_output.CopyFrom(python_to_value(result.structured_output))
    if result.approval is not None:
        message.approval.CopyFrom(ticket_to_proto(result.approval))
    if result.sandbox is not None:
        message.sandbox.CopyFrom(placement_to_proto(result.sandbox))
    message.policy_rule = result.policy_rule
    return message


def placement_to_proto(placement: SandboxPlacement) -> pb.SandboxPlacement:
    return pb.SandboxPlacement(
        runtime=_RUNTIMES[placement.runtime],
        network=placement.network,
        memory_limit_bytes=placement.memory_limit_bytes or 0,
    )


def placement_from_proto(message: pb.SandboxPlacement) -> SandboxPlacement:
    return SandboxPlacement(
        runtime=_RUNTIMES_IN.get(message.runtime, Runtime.HOST),
        network=message.network,
        memory_limit_bytes=message.memory_limit_bytes or None,
    )


def _timestamp(unix: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(round(unix * 1e9))
    return stamp


def ticket_to_proto(ticket: ApprovalTicket) -> pb.ApprovalTicket:
    return pb.ApprovalTicket(
        ticket_id=ticket.ticket_id,
        tool_name=ticket.tool_name,
        arguments_json=ticket.arguments_json,
        summary=ticket.summary,
        requested_by=ticket.requested_by,
        reason=ticket.reason,
        state=_APPROVAL_STATES[ticket.state],
        created_at=_timestamp(ticket.created_at),
        expires_at=_timestamp(ticket.expires_at),
        decided_by=ticket.decided_by,
        decision_reason=ticket.decision_reason,
        context=context_to_proto(ticket.context),
    )


def ticket_from_proto(message: pb.ApprovalTicket) -> ApprovalTicket:
    return ApprovalTicket(
        ticket_id=message.ticket_id,
        tool_name=message.tool_name,
        arguments_json=message.arguments_json,
        summary=message.summary,
        requested_by=message.requested_by,
        reason=message.reason,
        state=_APPROVAL_STATES_IN.get(message.state, ApprovalState.PENDING),
        created_at=message.created_at.ToNanoseconds() / 1e9,
        expires_at=message.expires_at.ToNanoseconds() / 1e9,
        decided_by=message.decided_by,
        decision_reason=message.decision_reason,
        context=context_from_proto(message.context),
    )


def result_from_proto(message: pb.ToolResult, *, from_provider: bool = False) -> ToolResult:
    """A result from a peer: a broken one becomes an honest failure. A
    provider's result never carries policy fields (tickets, placement, rules):
    only the registry decides those."""
    policy = {} if from_provider else _policy_fields(message)
    code = _ERROR_CODES_IN.get(message.error_code)
    structured = (
        value_to_python(message.structured_output)
        if message.HasField("structured_output")
        else None
    )
    if message.success:
        return ToolResult.ok(message.output, structured).model_copy(
            update={
                "duration_seconds": duration_to_seconds(message.duration),
                "truncated": message.truncated,
                "original_size_bytes": message.original_size_bytes,
                **policy,
            }
        )
    return ToolResult(
        success=False,
        output=message.output,
        error=message.error or "the tool failed without saying why",
        error_code=code or ErrorCode.HANDLER_ERROR,
        duration_seconds=duration_to_seconds(message.duration),
        truncated=message.truncated,
        original_size_bytes=message.original_size_bytes,
        **policy,
    )


def _policy_fields(message: pb.ToolResult) -> dict[str, Any]:
    fields: dict[str, Any] = {"policy_rule": message.policy_rule}
    if message.HasField("approval"):
        fields["approval"] = ticket_from_proto(message.approval)
    if message.HasField("sandbox"):
        fields["sandbox"] = placement_from_proto(message.sandbox)
    return fields


def format_from_proto(value: int) -> ModelFormat:
    fmt = _FORMATS_IN.get(value)
    if fmt is None:
        names = ", ".join(rpb.ModelFormat.Name(v) for v in _FORMATS.values())
        raise ConversionError(f"format must be one of {names}")
    return fmt


def format_to_proto(fmt: ModelFormat) -> int:
    return _FORMATS[fmt]


def tier_from_proto(value: int) -> SafetyTier | None:
    return _TIERS_IN.get(value)


def tier_to_proto(tier: SafetyTier) -> int:
    return _TIERS[tier]


class ListFilters(TypedDict):
    """The keyword arguments of `ToolRegistry.list_page` that a `ListRequest` carries."""

    group: str
    tier: SafetyTier | None
    name_prefix: str
    page_size: int
    page_token: str


def list_filters_from_proto(request: rpb.ListRequest) -> ListFilters:
    return ListFilters(
        group=request.group,
        tier=tier_from_proto(request.safety_tier),
        name_prefix=request.name_prefix,
        page_size=request.page_size,
        page_token=request.page_token,
    )


def list_response(page: ListPage) -> rpb.ListResponse:
    return rpb.ListResponse(
        tools=[definition_to_proto(d) for d in page.tools],
        next_page_token=page.next_page_token,
        registry_version=page.version,
        etag=page.etag,
    )


_EVENT_KINDS = {
    EventKind.SYNCED: rpb.REGISTRY_EVENT_KIND_SYNCED,
    EventKind.TOOL_ADDED: rpb.REGISTRY_EVENT_KIND_TOOL_ADDED,
    EventKind.TOOL_REMOVED: rpb.REGISTRY_EVENT_KIND_TOOL_REMOVED,
    EventKind.PROVIDER_DISCONNECTED: rpb.REGISTRY_EVENT_KIND_PROVIDER_DISCONNECTED,
}


_EVENT_KINDS_IN = _inverse(_EVENT_KINDS)


def event_from_proto(message: rpb.WatchResponse) -> RegistryEvent:
    return RegistryEvent(
        kind=_EVENT_KINDS_IN.get(message.kind, EventKind.SYNCED),
        version=message.registry_version,
        name=message.tool_name,
        definition=definition_from_proto(message.definition)
        if message.HasField("definition")
        else None,
        provider_id=message.provider_id,
    )


def event_to_proto(event: RegistryEvent) -> rpb.WatchResponse:
    message = rpb.WatchResponse(
        registry_version=event.version,
        kind=_EVENT_KINDS[event.kind],
        tool_name=event.name,
        provider_id=event.provider_id,
    )
    if event.definition is not None:
        message.definition.CopyFrom(definition_to_proto(event.definition))
    return message


def dispatch_response(result: ToolResult) -> rpb.DispatchResponse:
    return rpb.DispatchResponse(result=result_to_proto(result))


def model_tools_to_proto(converted: ModelTools) -> rpb.ToModelToolsResponse:
    return rpb.ToModelToolsResponse(
        tools_json=json.dumps(converted.tools, ensure_ascii=False),
        diagnostics=[
            rpb.Diagnostic(tool_name=d.tool_name, path=d.path, message=d.message)
            for d in converted.diagnostics
        ],
    )
