"""The asyncio client, over a `grpc.aio.Channel`."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from toolwire import convert
from toolwire.events import RegistryEvent
from toolwire.models import (
    ApprovalTicket,
    CallContext,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

from . import _channel, _wire
from ._wire import BatchItem, BatchOutcome, ModelToolsResult
from .errors import error_from_rpc

if TYPE_CHECKING:
    from toolwire.tools import Tool

    from .provider import Provider

_Response = TypeVar("_Response")
_Item = TypeVar("_Item")


class AsyncToolwireClient:
    """The async twin of `ToolwireClient` (same methods, same errors), plus
    `provide()` to serve tools from this process.

    A channel passed in stays the caller's: `close()` closes only the channel
    the client created itself. Create the client inside the event loop that
    uses it. The token and TLS settings are `ToolwireClient`'s.
    """

    def __init__(
        self,
        target: str = _wire.DEFAULT_TARGET,
        *,
        channel: grpc.aio.Channel | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
        max_message_bytes: int = _channel.DEFAULT_MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: bool = False,
        root_certificates: bytes | None = None,
        client_certificate: tuple[bytes, bytes] | None = None,
        server_name_override: str | None = None,
    ) -> None:
        connection = _channel.Connection.resolve(
            target,
            channel=channel,
            metadata=metadata,
            token=token,
            tls=tls,
            root_certificates=root_certificates,
            client_certificate=client_certificate,
            server_name_override=server_name_override,
            max_message_bytes=max_message_bytes,
        )
        self._owns_channel = channel is None
        self._channel: grpc.aio.Channel = (
            channel if channel is not None else connection.aio_channel()
        )
        self._stub = rpc.RegistryServiceStub(self._channel)
        self._metadata = connection.call_metadata(own_channel=self._owns_channel)
        self._timeout = timeout

    @property
    def stub(self) -> rpc.RegistryServiceStub:
        """The generated stub over this client's channel."""
        return self._stub

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """What every call on the stub must send, the token included when the
        channel's credentials do not carry it."""
        return self._metadata

    @property
    def timeout(self) -> float | None:
        return self._timeout

    async def register(
        self, definition: ToolDefinition, provider_id: str, *, replace: bool = False
    ) -> ToolDefinition:
        response = await self._call(
            self._stub.Register,
            _wire.register_request(definition, provider_id, replace),
            name=definition.name,
        )
        return _wire.registered(response)

    async def unregister(self, name: str) -> None:
        await self._call(self._stub.Unregister, rpb.UnregisterRequest(name=name), name=name)

    async def list(
        self, *, group: str = "", tier: SafetyTier | None = None, name_prefix: str = ""
    ) -> list[ToolDefinition]:
        response = await self._call(self._stub.List, _wire.list_request(group, tier, name_prefix))
        return _wire.listed(response)

    async def dispatch(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        context: CallContext | None = None,
        timeout: float | None = None,
        approval_ticket: str = "",
    ) -> ToolResult:
        """See `ToolwireClient.dispatch`."""
        response = await self._call(
            self._stub.Dispatch,
            _wire.dispatch_request(name, arguments, context, approval_ticket),
            name=name,
            timeout=timeout,
            typed=False,
        )
        return _wire.dispatched(response)

    async def dispatch_batch(
        self,
        calls: Sequence[BatchItem],
        *,
        context: CallContext | None = None,
        timeout: float | None = None,
    ) -> builtins.list[BatchOutcome]:
        """See `ToolwireClient.dispatch_batch`."""
        response = await self._call(
            self._stub.DispatchBatch,
            _wire.batch_request(calls, context),
            timeout=timeout,
            typed=False,
        )
        return _wire.batch_outcomes(response)

    async def approve(
        self, ticket_id: str, reason: str = "", *, remember: bool = False
    ) -> ApprovalTicket:
        """See `ToolwireClient.approve`."""
        response = await self._call(
            self._stub.Approve, _wire.approve_request(ticket_id, reason, remember), typed=False
        )
        return _wire.ticket(response)

    async def deny(self, ticket_id: str, reason: str = "") -> ApprovalTicket:
        """See `ToolwireClient.deny`."""
        response = await self._call(
            self._stub.Deny, _wire.deny_request(ticket_id, reason), typed=False
        )
        return _wire.ticket(response)

    async def generate_stubs(self, names: Sequence[str] = ()) -> str:
        response = await self._call(self._stub.GenerateStubs, _wire.stubs_request(names))
        return str(response.typescript)

    async def to_model_tools(
        self, fmt: ModelFormat | str, names: Sequence[str] = ()
    ) -> ModelToolsResult:
        response = await self._call(self._stub.ToModelTools, _wire.model_tools_request(fmt, names))
        return _wire.model_tools(response)

    def provide(
        self, tools: Sequence[Tool | Callable[..., Any]], *, name: str = "python-provider"
    ) -> Provider:
        """A provider serving `tools` over a `Provide` stream; use it as
        `async with client.provide([...]) as provider:`."""
        from .provider import Provider

        return Provider(self, tools, name=name)

    async def close(self) -> None:
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> AsyncToolwireClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def watch(self) -> AsyncIterator[RegistryEvent]:
        """Registry changes as they happen: first a SYNCED event at the current
        version, then tools added and removed and providers disconnected.
        To stay in step, watch, then `list`, and apply later versions."""
        return self._stream(self._stub.Watch, rpb.WatchRequest(), convert.event_from_proto)

    def watch_approvals(self) -> AsyncIterator[ApprovalTicket]:
        """See `ToolwireClient.watch_approvals`."""
        return self._stream(self._stub.WatchApprovals, rpb.WatchApprovalsRequest(), _wire.ticket)

    async def _stream(
        self, method: Callable[..., Any], request: Any, parse: Callable[[Any], _Item]
    ) -> AsyncIterator[_Item]:
        call = method(request, metadata=self._metadata)
        try:
            async for message in call:
                yield parse(message)
        except grpc.RpcError as e:
            raise error_from_rpc(e, typed=False) from e
        finally:
            call.cancel()

    async def _call(
        self,
        method: Callable[..., Awaitable[_Response]],
        request: Any,
        *,
        name: str = "",
        timeout: float | None = None,
        typed: bool = True,
    ) -> _Response:
        try:
            return await method(
                request,
                timeout=timeout if timeout is not None else self._timeout,
                metadata=self._metadata,
            )
        except grpc.RpcError as e:
            raise error_from_rpc(e, name=name, typed=typed) from e
