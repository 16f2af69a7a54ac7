"""A test double of the registry server, for the async client and the provider.

`FakeRegistryServer` is NOT the real server: it is a minimal scripted servicer
on a real `grpc.aio.server()` (port 0) that records what the client sends and
answers what each test tells it to, so that the client's own logic (request
building, the Provide protocol, error mapping over grpc.aio) is tested over a
real HTTP/2 connection. The real server's end-to-end tests live elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from toolwire import convert
from toolwire.models import ToolResult
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

WAIT = 5.0
"""How long the fake waits for something that should happen at once."""


@dataclass(frozen=True)
class _Abort:
    code: grpc.StatusCode
    details: str
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    def trailers(self) -> tuple[tuple[str, bytes], ...]:
        """A google.rpc.Status with a toolwire ErrorInfo, as the real server sends."""
        if not self.reason:
            return ()
        info = error_details_pb2.ErrorInfo(
            reason=self.reason, domain="toolwire", metadata=self.metadata
        )
        detail = any_pb2.Any()
        detail.Pack(info)
        status = status_pb2.Status(code=self.code.value[0], message=self.details, details=[detail])
        return (("grpc-status-details-bin", status.SerializeToString()),)


_END = object()


@dataclass(frozen=True)
class UnaryCall:
    method: str
    request: Any
    time_remaining: float | None
    metadata: tuple[tuple[str, Any], ...]


class FakeRegistryServer(rpc.RegistryServiceServicer):
    """A scripted test double of the registry server (see the module docstring)."""

    provider_id = "prov-1"

    def __init__(self) -> None:
        self._unary_calls: asyncio.Queue[UnaryCall] = asyncio.Queue()
        self._unary_answers: dict[str, Any] = {}
        self._hellos: asyncio.Queue[rpb.ProviderHello] = asyncio.Queue()
        self._reject_hello: _Abort | None = None
        self._outcomes: asyncio.Queue[rpb.CallOutcome | None] = asyncio.Queue()
        self._to_provider: asyncio.Queue[Any] = asyncio.Queue()
        self.provide_ended = asyncio.Event()
        """Set when the Provide handler has returned."""

    # scripting, from the tests

    def answer(self, method: str, response: Any) -> None:
        self._unary_answers[method] = response

    def fail(
        self,
        method: str,
        code: grpc.StatusCode,
        details: str,
        reason: str = "",
        metadata: dict[str, str] | None = None,
    ) -> None:
        self._unary_answers[method] = _Abort(code, details, reason, metadata or {})

    def reject_hello(
        self, code: grpc.StatusCode, details: str, reason: str, metadata: dict[str, str]
    ) -> None:
        self._reject_hello = _Abort(code, details, reason, metadata)

    def send_call(
        self, call_id: str, name: str, arguments_json: str = "{}", timeout: float | None = None
    ) -> None:
        order = rpb.CallOrder(call_id=call_id, name=name, arguments_json=arguments_json)
        order.context.caller_id = "agent-1"
        if timeout is not None:
            order.timeout.CopyFrom(convert.seconds_to_duration(timeout))
        self._to_provider.put_nowait(rpb.ProvideResponse(call=order))

    def send_cancel(self, call_id: str) -> None:
        self._to_provider.put_nowait(
            rpb.ProvideResponse(cancelled=rpb.CallCancelled(call_id=call_id))
        )

    def abort_stream(self, code: grpc.StatusCode, details: str) -> None:
        self._to_provider.put_nowait(_Abort(code, details))

    def end_stream(self) -> None:
        self._to_provider.put_nowait(_END)

    # observing, from the tests

    async def next_unary(self) -> UnaryCall:
        return await asyncio.wait_for(self._unary_calls.get(), WAIT)

    async def next_hello(self) -> rpb.ProviderHello:
        return await asyncio.wait_for(self._hellos.get(), WAIT)

    def hello_count(self) -> int:
        return self._hellos.qsize()

    async def next_result(self) -> tuple[str, ToolResult]:
        """The next outcome a provider sent, as (call_id, result)."""
        outcome = await asyncio.wait_for(self._outcomes.get(), WAIT)
        assert outcome is not None, "the provider closed its side instead of answering"
        return outcome.call_id, convert.result_from_proto(outcome.result)

    async def provider_half_closed(self) -> bool:
        """True if the next thing the provider did was closing its side."""
        return await asyncio.wait_for(self._outcomes.get(), WAIT) is None

    # the servicer

    async def _unary(self, method: str, request: Any, context: Any) -> Any:
        self._unary_calls.put_nowait(
            UnaryCall(
                method, request, context.time_remaining(), tuple(context.invocation_metadata())
            )
        )
        answer = self._unary_answers[method]
        if isinstance(answer, _Abort):
            await context.abort(answer.code, answer.details, trailing_metadata=answer.trailers())
        return answer

    async def Register(self, request: Any, context: Any) -> Any:
        return await self._unary("Register", request, context)

    async def List(self, request: Any, context: Any) -> Any:
        return await self._unary("List", request, context)

    async def Dispatch(self, request: Any, context: Any) -> Any:
        return await self._unary("Dispatch", request, context)

    async def ToModelTools(self, request: Any, context: Any) -> Any:
        return await self._unary("ToModelTools", request, context)

    async def Provide(
        self, request_iterator: AsyncIterator[rpb.ProvideRequest], context: Any
    ) -> None:
        try:
            first = await anext(aiter(request_iterator))
            self._hellos.put_nowait(first.hello)
            if self._reject_hello is not None:
                reject = self._reject_hello
                await context.abort(
                    reject.code, reject.details, trailing_metadata=reject.trailers()
                )
            # "stored" definitions: what the provider announced, plus a label
            stored = [
                convert.definition_to_proto(
                    convert.definition_from_proto(t).model_copy(update={"labels": {"stored": "1"}})
                )
                for t in first.hello.tools
            ]
            await context.write(
                rpb.ProvideResponse(
                    accepted=rpb.ProviderAccepted(provider_id=self.provider_id, tools=stored)
                )
            )
            reader = asyncio.create_task(self._read_outcomes(request_iterator))
            try:
                await self._send_scripted(context, reader)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        finally:
            self.provide_ended.set()

    async def _send_scripted(self, context: Any, reader: asyncio.Task[None]) -> None:
        """Sends what the test scripts; ends with OK when the provider half-closes."""
        while True:
            scripted = asyncio.ensure_future(self._to_provider.get())
            await asyncio.wait({scripted, reader}, return_when=asyncio.FIRST_COMPLETED)
            if not scripted.done():
                scripted.cancel()
                return
            item = scripted.result()
            if item is _END:
                return
            if isinstance(item, _Abort):
                await context.abort(item.code, item.details, trailing_metadata=item.trailers())
            await context.write(item)

    async def _read_outcomes(self, requests: AsyncIterator[rpb.ProvideRequest]) -> None:
        async for message in requests:
            self._outcomes.put_nowait(message.outcome)
        self._outcomes.put_nowait(None)


@dataclass
class RunningFake:
    fake: FakeRegistryServer
    server: Any
    target: str


@pytest.fixture
async def running_fake() -> AsyncIterator[RunningFake]:
    fake = FakeRegistryServer()
    server = grpc.aio.server()
    rpc.add_RegistryServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield RunningFake(fake, server, f"127.0.0.1:{port}")
    finally:
        await server.stop(None)


@pytest.fixture
def fake(running_fake: RunningFake) -> FakeRegistryServer:
    return running_fake.fake
