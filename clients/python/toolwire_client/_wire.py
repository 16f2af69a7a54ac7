"""Requests and responses shared by the sync and the async client.

Both clients build the same messages and read the same answers; only the
calling convention differs. Models <-> protobuf goes through `toolwire.convert`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from toolwire import convert
from toolwire.models import (
    ApprovalTicket,
    CallContext,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb

DEFAULT_TARGET = "127.0.0.1:50051"


class Diagnostic(NamedTuple):
    """Something a model-format conversion could not carry over as it was."""

    tool_name: str
    path: str
    """Where in the schema, as a JSON pointer."""
    message: str


@dataclass(frozen=True, slots=True)
class ModelToolsResult:
    """Tools in a model API's format, ready to send as its `tools`."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BatchCall:
    """One tool call of a model's turn, for `dispatch_batch`."""

    name: str
    arguments: Mapping[str, Any] | str | None = None
    """A mapping (sent as JSON) or the model's raw JSON text."""
    call_id: str = ""
    """The model's id for the call; empty means `call-<index>`."""
    approval_ticket: str = ""


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """The result of one call of a batch, under the id it was sent with."""

    call_id: str
    result: ToolResult


BatchItem = BatchCall | tuple[str, Mapping[str, Any] | str | None] | Mapping[str, Any]
"""A `BatchCall`, a `(name, arguments)` pair, or a mapping with BatchCall's fields."""


def register_request(
    definition: ToolDefinition, provider_id: str, replace: bool
) -> rpb.RegisterRequest:
    return rpb.RegisterRequest(
        definition=convert.definition_to_proto(definition),
        provider_id=provider_id,
        replace=replace,
    )


def registered(response: rpb.RegisterResponse) -> ToolDefinition:
    return convert.definition_from_proto(response.definition)


def list_request(group: str, tier: SafetyTier | None, name_prefix: str) -> rpb.ListRequest:
    wire_tier = convert.tier_to_proto(SafetyTier(tier)) if tier is not None else 0
    return rpb.ListRequest(
        group=group, safety_tier=cast("pb.SafetyTier", wire_tier), name_prefix=name_prefix
    )


def listed(response: rpb.ListResponse) -> list[ToolDefinition]:
    return [convert.definition_from_proto(d) for d in response.tools]


def arguments_json(arguments: Mapping[str, Any] | str | None) -> str:
    """A str is the model's raw JSON and passes as it is; a mapping is encoded."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))


def dispatch_request(
    name: str,
    arguments: Mapping[str, Any] | str | None,
    context: CallContext | None,
    approval_ticket: str = "",
) -> rpb.DispatchRequest:
    request = rpb.DispatchRequest(
        name=name, arguments_json=arguments_json(arguments), approval_ticket=approval_ticket
    )
    if context is not None:
        request.context.CopyFrom(convert.context_to_proto(context))
    return request


def dispatched(response: rpb.DispatchResponse) -> ToolResult:
    return convert.result_from_proto(response.result)


def batch_request(
    calls: Sequence[BatchItem], context: CallContext | None
) -> rpb.DispatchBatchRequest:
    request = rpb.DispatchBatchRequest(
        calls=[_batch_call(item, index) for index, item in enumerate(calls)]
    )
    if context is not None:
        request.context.CopyFrom(convert.context_to_proto(context))
    return request


def batch_outcomes(response: rpb.DispatchBatchResponse) -> list[BatchOutcome]:
    return [BatchOutcome(r.call_id, convert.result_from_proto(r.result)) for r in response.results]


def _batch_call(item: BatchItem, index: int) -> rpb.BatchCall:
    if isinstance(item, tuple):
        name, arguments = item
        call = BatchCall(name, arguments)
    elif isinstance(item, Mapping):
        try:
            call = BatchCall(**item)
        except TypeError as e:
            raise ValueError(f"batch call {index}: {e}") from None
    else:
        call = item
    return rpb.BatchCall(
        call_id=call.call_id or f"call-{index}",
        name=call.name,
        arguments_json=arguments_json(call.arguments),
        approval_ticket=call.approval_ticket,
    )


def approve_request(ticket_id: str, reason: str, remember: bool) -> rpb.ApproveRequest:
    return rpb.ApproveRequest(ticket_id=ticket_id, reason=reason, remember=remember)


def deny_request(ticket_id: str, reason: str) -> rpb.DenyRequest:
    return rpb.DenyRequest(ticket_id=ticket_id, reason=reason)


def ticket(
    response: rpb.ApproveResponse | rpb.DenyResponse | rpb.WatchApprovalsResponse,
) -> ApprovalTicket:
    return convert.ticket_from_proto(response.ticket)


def stubs_request(names: Sequence[str]) -> rpb.GenerateStubsRequest:
    return rpb.GenerateStubsRequest(names=list(_names(names)))


def model_tools_request(fmt: ModelFormat | str, names: Sequence[str]) -> rpb.ToModelToolsRequest:
    try:
        model_format = ModelFormat(fmt)
    except ValueError:
        known = ", ".join(f.value for f in ModelFormat)
        raise ValueError(f"unknown model format {fmt!r}; use one of {known}") from None
    wire_format = cast("rpb.ModelFormat", convert.format_to_proto(model_format))
    return rpb.ToModelToolsRequest(format=wire_format, names=list(_names(names)))


def model_tools(response: rpb.ToModelToolsResponse) -> ModelToolsResult:
    tools = json.loads(response.tools_json) if response.tools_json else []
    if not isinstance(tools, list):
        raise ValueError("the server's tools_json is not a JSON array")
    return ModelToolsResult(
        tools=tools,
        diagnostics=[Diagnostic(d.tool_name, d.path, d.message) for d in response.diagnostics],
    )


def _names(names: Sequence[str]) -> Sequence[str]:
    if isinstance(names, str):  # a lone name is a common slip: ("a") is "a"
        return [names]
    return names
