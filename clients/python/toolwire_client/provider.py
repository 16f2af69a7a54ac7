"""Serving tools from this process over the registry's `Provide` stream.

The provider announces its tools in a `ProviderHello`, then runs the call
orders the registry sends, many at once, and answers each with a
`CallOutcome` in the order they finish. A call runs through an in-process
`ToolRegistry`, so validation, timeouts and result shaping are the core's,
not the client's.

Only one task ever writes to the stream: in grpc.aio, cancelling a task in
the middle of a write cancels the whole RPC, and call tasks are cancelled
whenever the registry gives up on a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import grpc
from toolwire import convert
from toolwire.declare import as_tool
from toolwire.errors import ToolwireError
from toolwire.models import ErrorCode, ToolDefinition, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool
from toolwire.v1 import registry_service_pb2 as rpb

from .errors import ToolwireRpcError, error_from_rpc

if TYPE_CHECKING:
    from .aio import AsyncToolwireClient

log = logging.getLogger(__name__)

DEFAULT_CLOSE_TIMEOUT = 5.0
_DONE_WRITING: Final = None


class Provider:
    """One connection that serves tools to the registry; an async context manager.

    `__aenter__` registers the tools (raising `DuplicateToolError`,
    `InvalidDefinitionError`, … as `register` does); leaving the context
    closes the stream, and the registry unregisters the tools. If the
    registry goes away, in-flight calls are cancelled and `wait_closed()`
    raises `ToolwireRpcError`.
    """

    def __init__(
        self,
        client: AsyncToolwireClient,
        tools: Sequence[Tool | Callable[..., Any]],
        *,
        name: str = "python-provider",
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self._client = client
        self._tools = list(tools)
        self._name = name
        self._close_timeout = close_timeout
        self._registry: ToolRegistry | None = None
        self._call: Any = None  # grpc.aio.StreamStreamCall
        self._outbox: asyncio.Queue[rpb.ProvideRequest | None] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closer: asyncio.Task[None] | None = None
        self._calls: dict[str, asyncio.Task[None]] = {}
        """Calls whose outcome is still owed, by call id."""
        self._running: set[asyncio.Task[None]] = set()
        """Every call task not yet finished, including cancelled ones."""
        self._closing = False
        self._error: ToolwireError | None = None
        self.provider_id = ""
        self._definitions: list[ToolDefinition] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tools this provider serves, as the registry stores them."""
        return list(self._definitions)

    @property
    def closed(self) -> bool:
        return self._pump is not None and self._pump.done()

    async def start(self) -> Provider:
        """Opens the stream and waits until the registry accepts the tools."""
        if self._call is not None:
            raise RuntimeError("the provider was already started")
        registry = ToolRegistry()
        self._registry = registry
        try:
            local = [registry.register(as_tool(t)) for t in self._tools]
        except BaseException:
            registry.close()
            raise
        hello = rpb.ProvideRequest(
            hello=rpb.ProviderHello(
                provider_name=self._name,
                tools=[convert.definition_to_proto(d) for d in local],
            )
        )
        # the client's metadata carries the token when its channel does not
        self._call = call = self._client.stub.Provide(metadata=self._client.metadata)
        try:
            accepted = await asyncio.wait_for(self._handshake(call, hello), self._client.timeout)
        except BaseException as e:
            call.cancel()
            registry.close()
            if isinstance(e, TimeoutError):
                raise ToolwireRpcError(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"the registry did not accept provider '{self._name}' in time",
                ) from e
            if isinstance(e, grpc.RpcError):
                only = local[0].name if len(local) == 1 else ""
                raise error_from_rpc(e, name=only) from e
            raise
        self.provider_id = accepted.provider_id
        self._definitions = [convert.definition_from_proto(d) for d in accepted.tools]
        self._writer = asyncio.create_task(self._write_loop(call), name="toolwire-provider-writer")
        self._pump = asyncio.create_task(self._read_loop(call), name="toolwire-provider-reader")
        return self

    async def _handshake(self, call: Any, hello: rpb.ProvideRequest) -> rpb.ProviderAccepted:
        with contextlib.suppress(asyncio.InvalidStateError):  # ended already: read says why
            await call.write(hello)
        first = await call.read()
        if first is grpc.aio.EOF or first.WhichOneof("kind") != "accepted":
            raise ToolwireRpcError(
                grpc.StatusCode.INTERNAL,
                "the registry did not answer the provider's hello with ProviderAccepted",
            )
        return first.accepted  # type: ignore[no-any-return]

    async def register(self, tool: Tool | Callable[..., Any]) -> ToolDefinition:
        """Serves one more tool; returns its definition as the registry stores it."""
        registry = self._registry
        if registry is None or self._pump is None or self._pump.done() or self._closing:
            raise RuntimeError("the provider is not connected")
        local = registry.register(as_tool(tool))
        try:
            stored = await self._client.register(local, self.provider_id)
        except BaseException:
            registry.unregister(local.name)
            raise
        self._definitions.append(stored)
        return stored

    async def wait_closed(self) -> None:
        """Returns when the stream has ended: after `close()`, or when the registry
        ended it. Raises `ToolwireRpcError` if the stream broke."""
        if self._pump is None:
            raise RuntimeError("the provider was not started")
        await asyncio.wait({self._pump})
        if self._error is not None:
            raise self._error

    async def close(self) -> None:
        """Cancels in-flight calls, ends the stream and waits until the registry
        has let go of the tools (up to `close_timeout`, then the stream is cut)."""
        if self._pump is None:
            if self._registry is not None:
                self._registry.close()
            return
        if self._closer is None:
            self._closer = asyncio.create_task(self._close(), name="toolwire-provider-close")
        await asyncio.shield(self._closer)

    async def _close(self) -> None:
        assert self._pump is not None
        assert self._writer is not None
        self._closing = True
        await self._stop_calls()
        self._outbox.put_nowait(_DONE_WRITING)
        tasks = {self._pump, self._writer}
        _, pending = await asyncio.wait(tasks, timeout=self._close_timeout)
        if pending:
            log.warning("the registry did not end the Provide stream in time; cutting it")
            self._call.cancel()
            for task in pending:
                task.cancel()
            await asyncio.wait(pending)
        if self._registry is not None:
            self._registry.close()

    async def __aenter__(self) -> Provider:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _read_loop(self, call: Any) -> None:
        """Reads orders until the stream ends; then nothing of ours keeps running."""
        try:
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    return
                kind = message.WhichOneof("kind")
                if kind == "call":
                    self._start_call(message.call)
                elif kind == "cancelled":
                    self._cancel_call(message.cancelled.call_id)
        except grpc.RpcError as e:
            if not self._closing:
                self._error = error_from_rpc(e, typed=False)
        except asyncio.CancelledError:
            if not self._closing:
                self._error = ToolwireRpcError(
                    grpc.StatusCode.CANCELLED, "the Provide stream was cancelled"
                )
        except Exception as e:  # a bug must end the stream, not leave it half-served
            log.exception("provider '%s' failed to read from the registry", self._name)
            self._error = ToolwireRpcError(grpc.StatusCode.INTERNAL, f"provider failed: {e!r}")
        finally:
            await self._stop_calls()
            if not self._closing:
                assert self._writer is not None
                self._writer.cancel()
                await asyncio.wait({self._writer})
                call.cancel()
                if self._registry is not None:
                    self._registry.close()

    async def _write_loop(self, call: Any) -> None:
        """The stream's only writer: outcomes in completion order, then the half-close."""
        while (request := await self._outbox.get()) is not _DONE_WRITING:
            try:
                await call.write(request)
            except (grpc.RpcError, asyncio.InvalidStateError):
                return  # the stream is gone; the reader reports why
        with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
            await call.done_writing()

    def _start_call(self, order: rpb.CallOrder) -> None:
        if self._closing or order.call_id in self._calls:
            return  # no new work while closing; a repeated id is ignored
        task = asyncio.create_task(self._run(order), name=f"toolwire-call-{order.call_id}")
        self._calls[order.call_id] = task
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def _cancel_call(self, call_id: str) -> None:
        task = self._calls.pop(call_id, None)
        if task is not None:
            task.cancel()

    async def _run(self, order: rpb.CallOrder) -> None:
        assert self._registry is not None
        timeout = convert.duration_to_seconds(order.timeout) if order.HasField("timeout") else None
        try:
            result = await self._registry.dispatch(
                order.name,
                order.arguments_json,
                convert.context_from_proto(order.context),
                timeout=timeout,
            )
        except Exception as e:  # dispatch never raises; if it ever does, still answer
            result = ToolResult.fail(
                ErrorCode.HANDLER_ERROR, f"provider failed to run '{order.name}': {e!r}"
            )
        if self._calls.pop(order.call_id, None) is None:
            return  # the registry gave up on this call: it expects no outcome
        outcome = rpb.CallOutcome(call_id=order.call_id, result=convert.result_to_proto(result))
        self._outbox.put_nowait(rpb.ProvideRequest(outcome=outcome))

    async def _stop_calls(self) -> None:
        self._calls.clear()
        running = list(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)


def serve_tools(
    target: str,
    tools: Sequence[Tool | Callable[..., Any]],
    *,
    name: str = "python-provider",
    metadata: Sequence[tuple[str, str]] = (),
    token: str | None = None,
    tls: bool = False,
    root_certificates: bytes | None = None,
    client_certificate: tuple[bytes, bytes] | None = None,
    server_name_override: str | None = None,
) -> None:
    """Serves `tools` to the registry at `target` until interrupted (Ctrl-C) or
    until the registry ends the stream. Blocks; for scripts. The token and TLS
    settings are `ToolwireClient`'s (the token defaults to env `TOOLWIRE_TOKEN`).

    Raises what `Provider.start` raises, and `ToolwireRpcError` if the stream
    breaks (the registry went away).
    """
    from .aio import AsyncToolwireClient

    async def main() -> None:
        async with (
            AsyncToolwireClient(
                target,
                metadata=metadata,
                token=token,
                tls=tls,
                root_certificates=root_certificates,
                client_certificate=client_certificate,
                server_name_override=server_name_override,
            ) as client,
            client.provide(tools, name=name) as provider,
        ):
            log.info(
                "serving %s as provider %s",
                ", ".join(d.name for d in provider.definitions),
                provider.provider_id,
            )
            await provider.wait_closed()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
