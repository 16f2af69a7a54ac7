"""RegistryService over gRPC (grpc.aio): the caller and deadline from the call,
the work in `RegistryHandlers`, errors as rich statuses."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import grpc

from toolwire import convert
from toolwire.auth import Principal
from toolwire.convert import ConversionError
from toolwire.errors import ToolwireError
from toolwire.events import WatchOverflowError
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


class RegistryServicer(rpc.RegistryServiceServicer):
    """Reads the caller and the deadline off the call, lets `RegistryHandlers`
    do the work, and turns the core's errors into rich statuses."""

    def __init__(self, handlers: RegistryHandlers) -> None:
        self._handlers = handlers

    async def _caller(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> Principal:
        try:
            return self._handlers.authorize(method, _authorization(context))
        except ToolwireError as e:
            await _abort(context, e)

    async def Register(
        self, request: rpb.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.RegisterResponse:
        caller = await self._caller("Register", context)
        try:
            return self._handlers.register(caller, request)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)

    async def Unregister(
        self, request: rpb.UnregisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.UnregisterResponse:
        caller = await self._caller("Unregister", context)
        try:
            return self._handlers.unregister(caller, request)
        except ToolwireError as e:
            await _abort(context, e)

    async def List(
        self, request: rpb.ListRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.ListResponse:
        caller = await self._caller("List", context)
        try:
            return self._handlers.list_tools(caller, request)
        except PageTokenError as e:
            await _abort(context, e)

    async def Watch(
        self, request: rpb.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[rpb.WatchResponse]:
        caller = await self._caller("Watch", context)
        try:
            async for event in self._handlers.watch(caller):
                yield event
        except WatchOverflowError as e:
            await _abort(context, e)

    async def Dispatch(
        self, request: rpb.DispatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.DispatchResponse:
        caller = await self._caller("Dispatch", context)
        return await self._handlers.dispatch(caller, request, context.time_remaining())

    async def DispatchBatch(
        self, request: rpb.DispatchBatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.DispatchBatchResponse:
        caller = await self._caller("DispatchBatch", context)
        try:
            return await self._handlers.dispatch_batch(caller, request, context.time_remaining())
        except ToolwireError as e:
            await _abort(context, e)

    async def GenerateStubs(
        self, request: rpb.GenerateStubsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.GenerateStubsResponse:
        caller = await self._caller("GenerateStubs", context)
        try:
            return self._handlers.generate_stubs(caller, request)
        except ToolwireError as e:
            await _abort(context, e)

    async def ToModelTools(
        self, request: rpb.ToModelToolsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.ToModelToolsResponse:
        caller = await self._caller("ToModelTools", context)
        try:
            return self._handlers.to_model_tools(caller, request)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)

    async def Approve(
        self, request: rpb.ApproveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.ApproveResponse:
        caller = await self._caller("Approve", context)
        try:
            return self._handlers.approve(caller, request)
        except ToolwireError as e:
            await _abort(context, e)

    async def Deny(
        self, request: rpb.DenyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.DenyResponse:
        caller = await self._caller("Deny", context)
        try:
            return self._handlers.deny(caller, request)
        except ToolwireError as e:
            await _abort(context, e)

    async def WatchApprovals(
        self, request: rpb.WatchApprovalsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[rpb.WatchApprovalsResponse]:
        await self._caller("WatchApprovals", context)
        try:
            async for ticket in self._handlers.watch_approvals():
                yield ticket
        except ToolwireError as e:
            await _abort(context, e)

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
