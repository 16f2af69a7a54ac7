"""RegistryService over gRPC (grpc.aio): the caller and deadline from the call,
the work in `RegistryHandlers`, errors as rich statuses."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeAlias, TypeVar

import grpc

from toolwire import convert
from toolwire.auth import Principal
from toolwire.convert import ConversionError
from toolwire.errors import ToolwireError
from toolwire.paging import PageTokenError
from toolwire.providers import CallCancelled, CallOrder, Outbound, ProviderSession
from toolwire.transport.handlers import RegistryHandlers
from toolwire.transport.status import rich_status
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

log = logging.getLogger(__name__)


async def _abort(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> NoReturn:
    code, message, trailers = rich_status(error)
    await _abort_with(context, code, message, trailers)


async def _abort_with(
    context: grpc.aio.ServicerContext[Any, Any],
    code: grpc.StatusCode,
    message: str,
    trailers: tuple[tuple[str, bytes], ...] = (),
) -> NoReturn:
    await context.abort(code, message, trailing_metadata=trailers)
    raise AssertionError("abort returns only by raising")


def _outbound_to_proto(item: Outbound) -> rpb.ProvideResponse:
    if isinstance(item, CallCancelled):
        return rpb.ProvideResponse(cancelled=rpb.CallCancelled(call_id=item.call_id))
    order: CallOrder = item
    return rpb.ProvideResponse(
        call=rpb.CallOrder(
            call_id=order.call_id,
            name=order.name,
            arguments_json=order.arguments_json,
            context=convert.context_to_proto(order.context),
            timeout=convert.seconds_to_duration(order.timeout_seconds),
        )
    )


def _authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


_Errors = (ToolwireError, ConversionError, PageTokenError)
_Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
T = TypeVar("T")


class RegistryServicer(rpc.RegistryServiceServicer):
    """Reads the caller and the deadline off the call, lets `RegistryHandlers`
    do the work, and turns the core's errors into rich statuses."""

    def __init__(self, handlers: RegistryHandlers) -> None:
        self._handlers = handlers

    async def _caller(self, method: str, context: _Context) -> Principal:
        try:
            return self._handlers.authorize(method, _authorization(context))
        except ToolwireError as e:
            await _abort(context, e)

    async def _unary(
        self, method: str, context: _Context, work: Callable[[Principal], Awaitable[T] | T]
    ) -> T:
        caller = await self._caller(method, context)
        try:
            outcome = work(caller)
            return await outcome if inspect.isawaitable(outcome) else outcome
        except _Errors as e:
            await _abort(context, e)

    async def _stream(
        self, method: str, context: _Context, work: Callable[[Principal], AsyncIterator[T]]
    ) -> AsyncIterator[T]:
        caller = await self._caller(method, context)
        try:
            async for item in work(caller):
                yield item
        except _Errors as e:
            await _abort(context, e)

    async def Register(
        self, request: rpb.RegisterRequest, context: _Context
    ) -> rpb.RegisterResponse:
        return await self._unary(
            "Register", context, lambda caller: self._handlers.register(caller, request)
        )

    async def Unregister(
        self, request: rpb.UnregisterRequest, context: _Context
    ) -> rpb.UnregisterResponse:
        return await self._unary(
            "Unregister", context, lambda caller: self._handlers.unregister(caller, request)
        )

    async def List(self, request: rpb.ListRequest, context: _Context) -> rpb.ListResponse:
        return await self._unary(
            "List", context, lambda caller: self._handlers.list_tools(caller, request)
        )

    async def Watch(
        self, request: rpb.WatchRequest, context: _Context
    ) -> AsyncIterator[rpb.WatchResponse]:
        async for event in self._stream("Watch", context, self._handlers.watch):
            yield event

    async def Dispatch(
        self, request: rpb.DispatchRequest, context: _Context
    ) -> rpb.DispatchResponse:
        return await self._unary(
            "Dispatch",
            context,
            lambda caller: self._handlers.dispatch(caller, request, context.time_remaining()),
        )

    async def DispatchBatch(
        self, request: rpb.DispatchBatchRequest, context: _Context
    ) -> rpb.DispatchBatchResponse:
        return await self._unary(
            "DispatchBatch",
            context,
            lambda caller: self._handlers.dispatch_batch(caller, request, context.time_remaining()),
        )

    async def GenerateStubs(
        self, request: rpb.GenerateStubsRequest, context: _Context
    ) -> rpb.GenerateStubsResponse:
        return await self._unary(
            "GenerateStubs", context, lambda caller: self._handlers.generate_stubs(caller, request)
        )

    async def ToModelTools(
        self, request: rpb.ToModelToolsRequest, context: _Context
    ) -> rpb.ToModelToolsResponse:
        return await self._unary(
            "ToModelTools", context, lambda caller: self._handlers.to_model_tools(caller, request)
        )

    async def Approve(self, request: rpb.ApproveRequest, context: _Context) -> rpb.ApproveResponse:
        return await self._unary(
            "Approve", context, lambda caller: self._handlers.approve(caller, request)
        )

    async def Deny(self, request: rpb.DenyRequest, context: _Context) -> rpb.DenyResponse:
        return await self._unary(
            "Deny", context, lambda caller: self._handlers.deny(caller, request)
        )

    async def WatchApprovals(
        self, request: rpb.WatchApprovalsRequest, context: _Context
    ) -> AsyncIterator[rpb.WatchApprovalsResponse]:
        tickets = self._stream(
            "WatchApprovals", context, lambda _: self._handlers.watch_approvals()
        )
        async for ticket in tickets:
            yield ticket

    async def Provide(
        self,
        request_iterator: AsyncIterator[rpb.ProvideRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        caller = await self._caller("Provide", context)
        first = await anext(aiter(request_iterator), None)
        if first is None or first.WhichOneof("kind") != "hello":
            await _abort_with(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message on a Provide stream must be a ProviderHello",
            )
        try:
            session, stored = self._handlers.connect_provider(caller, first.hello)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)
        log.info(
            "provider %s (%s) of %s connected with %d tools",
            session.name,
            session.provider_id,
            caller.name,
            len(stored),
        )
        hub = self._handlers.hub
        reader = asyncio.create_task(self._read_outcomes(request_iterator, session))
        try:
            await context.write(
                rpb.ProvideResponse(
                    accepted=rpb.ProviderAccepted(
                        provider_id=session.provider_id,
                        tools=[convert.definition_to_proto(t) for t in stored],
                    )
                )
            )
            while (item := await session.outbound.get()) is not None:
                await context.write(_outbound_to_proto(item))
        finally:
            reader.cancel()
            gone = hub.disconnect(session)
            log.info("provider %s disconnected; unregistered %s", session.name, gone)

    async def _read_outcomes(
        self, requests: AsyncIterator[rpb.ProvideRequest], session: ProviderSession
    ) -> None:
        """Deliver outcomes until the provider closes its side or the stream breaks."""
        try:
            async for message in requests:
                if message.WhichOneof("kind") == "outcome":
                    result = convert.result_from_proto(message.outcome.result, from_provider=True)
                    session.resolve(message.outcome.call_id, result)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("provider %s sent a message that could not be read", session.name)
        finally:
            session.end_stream()
