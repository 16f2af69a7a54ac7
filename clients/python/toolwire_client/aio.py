"""The asyncio client, over a `grpc.aio.Channel`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from toolwire import convert
from toolwire.events import RegistryEvent
from toolwire.models import CallContext, ModelFormat, SafetyTier, ToolDefinition, ToolResult
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

from . import _wire
from ._wire import ModelToolsResult
from .errors import error_from_rpc

if TYPE_CHECKING:
    from toolwire.tools import Tool

    from .provider import Provider

_Response = TypeVar("_Response")


class AsyncToolwireClient:
    """The async twin of `ToolwireClient` (same methods, same errors), plus
    `provide()` to serve tools from this process.

    A channel passed in stays the caller's: `close()` closes only the channel
    the client created itself. Create the client inside the event loop that
    uses it.
    """

    def __init__(
        self,
        target: str = _wire.DEFAULT_TARGET,
        *,
        channel: grpc.aio.Channel | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
        max_message_bytes: int = _wire.DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._owns_channel = channel is None
        self._channel: grpc.aio.Channel = (
            channel
            if channel is not None
            else grpc.aio.insecure_channel(target, options=_wire.channel_options(max_message_bytes))
        )
        self._stub = rpc.RegistryServiceStub(self._channel)
        self._metadata = tuple(metadata)
        self._timeout = timeout

    @property
    def stub(self) -> rpc.RegistryServiceStub:
        """The generated stub over this client's channel."""
        return self._stub

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    @property
    def timeout(self) -> float | None:
        return self._timeout

    async def register(self, definition: ToolDefinition, provider_id: str) -> ToolDefinition:
        response = await self._call(
            self._stub.Register,
            _wire.register_request(definition, provider_id),
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
    ) -> ToolResult:
        """See `ToolwireClient.dispatch`."""
        response = await self._call(
            self._stub.Dispatch,
            _wire.dispatch_request(name, arguments, context),
            name=name,
            timeout=timeout,
            typed=False,
        )
        return _wire.dispatched(response)

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

    async def watch(self) -> AsyncIterator[RegistryEvent]:
        """Registry changes as they happen: first a SYNCED event at the current
        version, then tools added and removed and providers disconnected.
        To stay in step, watch, then `list`, and apply later versions."""
        call = self._stub.Watch(rpb.WatchRequest(), metadata=self._metadata)
        try:
            async for message in call:
                yield convert.event_from_proto(message)
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e) from e
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
