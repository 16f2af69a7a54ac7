"""RegistryService, once, for both listeners: protobuf request in, core call,
protobuf response out.

The grpc.aio servicer and the gRPC-web/Connect application differ only in how
they read headers and deadlines, stream, and report errors; everything else —
which scope an RPC needs, which tools a caller sees, how a call is dispatched
for whom — happens here, so the listeners cannot drift apart. Errors are the
core's exceptions; each transport renders them with `transport.status`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from toolwire import convert
from toolwire.auth import Authenticator, Principal, Scope
from toolwire.batch import BatchCall
from toolwire.errors import ApprovalsOffError
from toolwire.events import EventKind, watch_events
from toolwire.models import ToolDefinition
from toolwire.policy.engine import PolicyEngine
from toolwire.providers import ProviderHub, ProviderSession
from toolwire.registry import ToolRegistry
from toolwire.v1 import registry_service_pb2 as rpb

SCOPES: dict[str, tuple[Scope | None, str]] = {
    "Register": (Scope.REGISTER, "register tools"),
    "Unregister": (Scope.REGISTER, "unregister tools"),
    "Provide": (Scope.REGISTER, "serve tools"),
    "List": (None, "list tools"),
    "Watch": (None, "watch the registry"),
    "GenerateStubs": (None, "generate stubs"),
    "ToModelTools": (None, "convert tools"),
    "Dispatch": (Scope.DISPATCH, "call tools"),
    "DispatchBatch": (Scope.DISPATCH, "call tools"),
    "Approve": (Scope.ADMIN, "approve calls"),
    "Deny": (Scope.ADMIN, "deny calls"),
    "WatchApprovals": (Scope.ADMIN, "watch approval requests"),
}
"""The scope each RPC needs (None: any authenticated caller)."""


class RegistryHandlers:
    def __init__(
        self,
        registry: ToolRegistry,
        hub: ProviderHub,
        authenticator: Authenticator,
    ) -> None:
        self.registry = registry
        self.hub = hub
        self.authenticator = authenticator

    def authorize(self, method: str, authorization: str | None) -> Principal:
        """The caller of `method`; raises AuthenticationError or ScopeError."""
        scope, action = SCOPES[method]
        return self.authenticator.authorize(authorization, scope, action)

    def authenticate(self, authorization: str | None) -> Principal:
        """The caller, whatever it may do (for refusals that do not depend on scope)."""
        return self.authenticator.authenticate(authorization)

    @property
    def _policy(self) -> PolicyEngine:
        if self.registry.policy is None:
            raise ApprovalsOffError()
        return self.registry.policy

    def register(self, principal: Principal, request: rpb.RegisterRequest) -> rpb.RegisterResponse:
        definition = convert.definition_from_proto(request.definition)
        stored = self.hub.register(
            request.provider_id, definition, principal, replace=request.replace
        )
        return rpb.RegisterResponse(definition=convert.definition_to_proto(stored))

    def unregister(
        self, principal: Principal, request: rpb.UnregisterRequest
    ) -> rpb.UnregisterResponse:
        self.registry.unregister(request.name, principal=principal)
        return rpb.UnregisterResponse()

    def list_tools(self, principal: Principal, request: rpb.ListRequest) -> rpb.ListResponse:
        page = self.registry.list_page(
            **convert.list_filters_from_proto(request), principal=principal
        )
        return convert.list_response(page)

    async def watch(self, principal: Principal) -> AsyncIterator[rpb.WatchResponse]:
        """Registry events about the tools the caller may see.

        A removal carries no definition to check, and the removal of a hidden
        tool would give its name away: removals are shown only for tools the
        caller could see (at SYNCED, or added since)."""
        shown: set[str] = set()
        async for event in watch_events(self.registry):
            if event.kind is EventKind.SYNCED:
                # Before the caller gets SYNCED, so before any List it makes after it.
                shown = {
                    d.name for d in self.registry.list() if self.registry.visible(principal, d)
                }
            elif event.kind is EventKind.TOOL_ADDED and event.definition is not None:
                if not self.registry.visible(principal, event.definition):
                    shown.discard(event.name)
                    continue
                shown.add(event.name)
            elif event.kind is EventKind.TOOL_REMOVED:
                if event.name not in shown:
                    continue
                shown.discard(event.name)
            yield convert.event_to_proto(event)

    async def dispatch(
        self, principal: Principal, request: rpb.DispatchRequest, timeout: float | None
    ) -> rpb.DispatchResponse:
        result = await self.registry.dispatch(
            request.name,
            request.arguments_json,
            convert.context_from_proto(request.context),
            timeout=timeout,
            principal=principal,
            ticket=request.approval_ticket,
        )
        return convert.dispatch_response(result)

    async def dispatch_batch(
        self, principal: Principal, request: rpb.DispatchBatchRequest, timeout: float | None
    ) -> rpb.DispatchBatchResponse:
        calls = [
            BatchCall(c.call_id, c.name, c.arguments_json, c.approval_ticket) for c in request.calls
        ]
        results = await self.registry.dispatch_batch(
            calls,
            convert.context_from_proto(request.context),
            timeout=timeout,
            principal=principal,
        )
        return rpb.DispatchBatchResponse(
            results=[
                rpb.BatchResult(call_id=call.call_id, result=convert.result_to_proto(result))
                for call, result in zip(calls, results, strict=True)
            ]
        )

    def generate_stubs(
        self, principal: Principal, request: rpb.GenerateStubsRequest
    ) -> rpb.GenerateStubsResponse:
        typescript = self.registry.generate_stubs(_names(request.names), principal=principal)
        return rpb.GenerateStubsResponse(typescript=typescript)

    def to_model_tools(
        self, principal: Principal, request: rpb.ToModelToolsRequest
    ) -> rpb.ToModelToolsResponse:
        fmt = convert.format_from_proto(request.format)
        converted = self.registry.to_model_tools(fmt, _names(request.names), principal=principal)
        return convert.model_tools_to_proto(converted)

    def approve(self, principal: Principal, request: rpb.ApproveRequest) -> rpb.ApproveResponse:
        ticket = self._policy.approve(
            request.ticket_id, principal, request.reason, request.remember
        )
        return rpb.ApproveResponse(ticket=convert.ticket_to_proto(ticket))

    def deny(self, principal: Principal, request: rpb.DenyRequest) -> rpb.DenyResponse:
        ticket = self._policy.deny(request.ticket_id, principal, request.reason)
        return rpb.DenyResponse(ticket=convert.ticket_to_proto(ticket))

    async def watch_approvals(self) -> AsyncIterator[rpb.WatchApprovalsResponse]:
        async for ticket in self._policy.approvals.watch():
            yield rpb.WatchApprovalsResponse(ticket=convert.ticket_to_proto(ticket))

    def connect_provider(
        self, principal: Principal, hello: rpb.ProviderHello
    ) -> tuple[ProviderSession, list[ToolDefinition]]:
        tools = [convert.definition_from_proto(t) for t in hello.tools]
        return self.hub.connect(hello.provider_name, tools, principal)


def _names(names: Sequence[str]) -> list[str] | None:
    """A request's tool names: empty means every tool the caller may see."""
    return list(names) or None
