"""RegistryService over gRPC (grpc.aio): protobuf in, core call, protobuf out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import grpc

from toolwire import convert
from toolwire.convert import ConversionError
from toolwire.errors import ToolwireError
from toolwire.events import WatchOverflowError, watch_events
from toolwire.paging import PageTokenError
from toolwire.providers import CallCancelled, CallOrder, Outbound, ProviderHub, ProviderSession
from toolwire.registry import ToolRegistry
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


class RegistryServicer(rpc.RegistryServiceServicer):
    def __init__(self, registry: ToolRegistry, hub: ProviderHub) -> None:
        self._registry = registry
        self._hub = hub

    async def Register(
        self, request: rpb.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.RegisterResponse:
        try:
            definition = convert.definition_from_proto(request.definition)
            stored = self._hub.register(request.provider_id, definition)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)
        return rpb.RegisterResponse(definition=convert.definition_to_proto(stored))

    async def Unregister(
        self, request: rpb.UnregisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.UnregisterResponse:
        try:
            self._registry.unregister(request.name)
        except ToolwireError as e:
            await _abort(context, e)
        return rpb.UnregisterResponse()

    async def List(
        self, request: rpb.ListRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.ListResponse:
        try:
            page = self._registry.list_page(**convert.list_filters_from_proto(request))
        except PageTokenError as e:
            await _abort(context, e)
        return convert.list_response(page)

    async def Watch(
        self, request: rpb.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[rpb.WatchResponse]:
        try:
            async for event in watch_events(self._registry):
                yield convert.event_to_proto(event)
        except WatchOverflowError as e:
            await _abort(context, e)

    async def Dispatch(
        self, request: rpb.DispatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.DispatchResponse:
        result = await self._registry.dispatch(
            request.name,
            request.arguments_json,
            convert.context_from_proto(request.context),
            timeout=context.time_remaining(),
        )
        return convert.dispatch_response(result)

    async def GenerateStubs(
        self, request: rpb.GenerateStubsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.GenerateStubsResponse:
        try:
            typescript = self._registry.generate_stubs(list(request.names) or None)
        except ToolwireError as e:
            await _abort(context, e)
        return rpb.GenerateStubsResponse(typescript=typescript)

    async def ToModelTools(
        self, request: rpb.ToModelToolsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rpb.ToModelToolsResponse:
        try:
            fmt = convert.format_from_proto(request.format)
            converted = self._registry.to_model_tools(fmt, list(request.names) or None)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)
        return convert.model_tools_to_proto(converted)

    async def Provide(
        self,
        request_iterator: AsyncIterator[rpb.ProvideRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        first = await anext(aiter(request_iterator), None)
        if first is None or first.WhichOneof("kind") != "hello":
            await _abort_with(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message on a Provide stream must be a ProviderHello",
            )
        try:
            tools = [convert.definition_from_proto(t) for t in first.hello.tools]
            session, stored = self._hub.connect(first.hello.provider_name, tools)
        except (ToolwireError, ConversionError) as e:
            await _abort(context, e)
        log.info(
            "provider %s (%s) connected with %d tools",
            session.name,
            session.provider_id,
            len(stored),
        )
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
            gone = self._hub.disconnect(session)
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
