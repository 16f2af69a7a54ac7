"""The grpc.aio servicer on a real socket: translation, status codes, providers,
health and reflection. Raw generated stubs, so the transport is tested on its own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from toolwire.models import ToolDefinition
from toolwire.registry import ToolRegistry
from toolwire.server import GrpcServer, ServerConfig
from toolwire.tools import Tool
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc
from toolwire.v1 import tool_pb2 as pb


async def _add(arguments: Any, context: Any) -> int:
    return int(arguments["a"]) + int(arguments["b"])


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    registry = ToolRegistry()
    registry.register(
        Tool.of(ToolDefinition(name="add", group="math", input_schema=ADD_SCHEMA), _add)
    )
    srv = GrpcServer(registry, ServerConfig(port=0, max_message_bytes=64 * 1024))
    await srv.start()
    yield srv
    await srv.stop(0)


@pytest.fixture
async def channel(server: GrpcServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


def error_info(error: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    raw = dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info


def string_param(name: str, required: bool = True) -> pb.ToolParameter:
    return pb.ToolParameter(name=name, type=pb.PARAMETER_TYPE_STRING, required=required)


async def test_dispatch_success_and_failure_are_both_ok_rpcs(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    ok = await stub.Dispatch(rpb.DispatchRequest(name="add", arguments_json='{"a": 2, "b": 3}'))
    assert ok.result.success and ok.result.output == "5"
    assert ok.result.structured_output.number_value == 5
    assert ok.result.duration.ToNanoseconds() > 0
    bad = await stub.Dispatch(rpb.DispatchRequest(name="add", arguments_json='{"a": 2}'))
    assert not bad.result.success
    assert bad.result.error_code == pb.ERROR_CODE_INVALID_ARGUMENTS
    assert "missing required field 'b'" in bad.result.error
    missing = await stub.Dispatch(rpb.DispatchRequest(name="nope"))
    assert missing.result.error_code == pb.ERROR_CODE_NOT_FOUND


async def test_list_filters_and_returns_both_forms(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    listed = await stub.List(rpb.ListRequest(group="math"))
    (tool,) = listed.tools
    assert tool.name == "add" and [p.name for p in tool.parameters] == ["a", "b"]
    assert tool.input_schema["type"] == "object"
    assert tool.safety_tier == pb.SAFETY_TIER_SIDE_EFFECTING
    assert not (await stub.List(rpb.ListRequest(group="web"))).tools
    assert not (await stub.List(rpb.ListRequest(safety_tier=pb.SAFETY_TIER_READ_ONLY))).tools


async def test_model_tools_and_stubs(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    converted = await stub.ToModelTools(rpb.ToModelToolsRequest(format=rpb.MODEL_FORMAT_ANTHROPIC))
    assert json.loads(converted.tools_json)[0]["input_schema"]["required"] == ["a", "b"]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ToModelTools(rpb.ToModelToolsRequest())
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    stubs = await stub.GenerateStubs(rpb.GenerateStubsRequest(names=["add"]))
    assert 'return await __callTool__("add"' in stubs.typescript
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GenerateStubs(rpb.GenerateStubsRequest(names=["nope"]))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert error_info(caught.value).reason == "TOOL_NOT_FOUND"


async def test_register_needs_a_live_provider(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    request = rpb.RegisterRequest(
        definition=pb.ToolDefinition(name="x", parameters=[string_param("q")]), provider_id="ghost"
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Register(request)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(caught.value).reason == "PROVIDER_NOT_FOUND"
    assert "open a Provide stream first" in (caught.value.details() or "")


async def test_unregister_unknown_tool_is_not_found(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Unregister(rpb.UnregisterRequest(name="nope"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert error_info(caught.value).metadata["name"] == "nope"


class ProviderStream:
    """A provider played by the test over the raw Provide stream."""

    def __init__(self, stub: rpc.RegistryServiceStub) -> None:
        self.outgoing: asyncio.Queue[rpb.ProvideRequest | None] = asyncio.Queue()
        self.call = stub.Provide(self._requests())

    async def _requests(self) -> AsyncIterator[rpb.ProvideRequest]:
        while (message := await self.outgoing.get()) is not None:
            yield message

    async def send(self, message: rpb.ProvideRequest) -> None:
        await self.outgoing.put(message)

    async def receive(self) -> rpb.ProvideResponse:
        response = await asyncio.wait_for(self.call.read(), 5)
        assert response is not grpc.aio.EOF
        return response  # type: ignore[no-any-return]


async def test_provide_register_dispatch_and_disconnect(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    provider = ProviderStream(stub)
    hello = rpb.ProviderHello(
        provider_name="test",
        tools=[pb.ToolDefinition(name="upper", parameters=[string_param("s")])],
    )
    await provider.send(rpb.ProvideRequest(hello=hello))
    accepted = (await provider.receive()).accepted
    assert [t.name for t in accepted.tools] == ["upper"] and accepted.provider_id

    registered = await stub.Register(
        rpb.RegisterRequest(
            definition=pb.ToolDefinition(name="lower", parameters=[string_param("s")]),
            provider_id=accepted.provider_id,
        )
    )
    assert registered.definition.input_schema["required"] == ["s"]

    pending = asyncio.ensure_future(
        stub.Dispatch(rpb.DispatchRequest(name="upper", arguments_json='{"s": "hi"}'))
    )
    order = (await provider.receive()).call
    assert order.name == "upper" and json.loads(order.arguments_json) == {"s": "hi"}
    assert 0 < order.timeout.ToTimedelta().total_seconds() <= 30
    await provider.send(
        rpb.ProvideRequest(
            outcome=rpb.CallOutcome(
                call_id=order.call_id, result=pb.ToolResult(success=True, output="HI")
            )
        )
    )
    assert (await pending).result.output == "HI"

    invalid = await stub.Dispatch(rpb.DispatchRequest(name="upper", arguments_json="{}"))
    assert invalid.result.error_code == pb.ERROR_CODE_INVALID_ARGUMENTS, (
        "validated before forwarding"
    )

    in_flight = asyncio.ensure_future(
        stub.Dispatch(rpb.DispatchRequest(name="lower", arguments_json='{"s": "X"}'))
    )
    await provider.receive()
    provider.call.cancel()
    result = (await in_flight).result
    assert result.error_code == pb.ERROR_CODE_PROVIDER_UNAVAILABLE
    for _ in range(100):
        names = [t.name for t in (await stub.List(rpb.ListRequest())).tools]
        if names == ["add"]:
            break
        await asyncio.sleep(0.02)
    assert names == ["add"], "a disconnected provider's tools are unregistered"


async def test_provider_timeout_sends_a_cancellation(
    server: GrpcServer, channel: grpc.aio.Channel
) -> None:
    stub = rpc.RegistryServiceStub(channel)
    provider = ProviderStream(stub)
    hello = rpb.ProviderHello(
        tools=[
            pb.ToolDefinition(
                name="slow",
                parameters=[string_param("s", required=False)],
                timeout={"nanos": 50_000_000},
            )
        ]
    )
    await provider.send(rpb.ProvideRequest(hello=hello))
    await provider.receive()
    pending = asyncio.ensure_future(stub.Dispatch(rpb.DispatchRequest(name="slow")))
    order = (await provider.receive()).call
    cancelled = (await provider.receive()).cancelled
    assert cancelled.call_id == order.call_id
    assert (await pending).result.error_code == pb.ERROR_CODE_TIMEOUT
    await provider.outgoing.put(None)


async def test_provider_hello_with_a_taken_name_fails_the_stream(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    provider = ProviderStream(stub)
    hello = rpb.ProviderHello(
        tools=[
            pb.ToolDefinition(name="fresh", parameters=[string_param("s")]),
            pb.ToolDefinition(name="add", parameters=[string_param("s")]),
        ]
    )
    await provider.send(rpb.ProvideRequest(hello=hello))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await provider.call.read()
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    info = error_info(caught.value)
    assert info.reason == "DUPLICATE_TOOL" and info.metadata["suggestion"] == "add_2"
    names = [t.name for t in (await stub.List(rpb.ListRequest())).tools]
    assert names == ["add"], "all or nothing: 'fresh' was not left behind"


async def test_provide_must_start_with_hello(channel: grpc.aio.Channel) -> None:
    provider = ProviderStream(rpc.RegistryServiceStub(channel))
    await provider.send(rpb.ProvideRequest(outcome=rpb.CallOutcome(call_id="1")))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await provider.call.read()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_malformed_definition_is_invalid_argument(channel: grpc.aio.Channel) -> None:
    provider = ProviderStream(rpc.RegistryServiceStub(channel))
    bad = pb.ToolDefinition(name="bad", parameters=[pb.ToolParameter(name="p")])
    await provider.send(rpb.ProvideRequest(hello=rpb.ProviderHello(tools=[bad])))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await provider.call.read()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "parameter 'p' needs a type" in (caught.value.details() or "")


async def test_oversize_request_is_resource_exhausted_and_server_keeps_serving(
    channel: grpc.aio.Channel,
) -> None:
    stub = rpc.RegistryServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Dispatch(rpb.DispatchRequest(name="add", arguments_json="x" * 100_000))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    ok = await stub.Dispatch(rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 1}'))
    assert ok.result.output == "2"


async def test_health_and_reflection(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "toolwire.v1.RegistryService"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = [s.name async for r in call for s in r.list_services_response.service]
    assert "toolwire.v1.RegistryService" in names and "grpc.health.v1.Health" in names


async def test_graceful_stop_reports_not_serving(
    server: GrpcServer, channel: grpc.aio.Channel
) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    await server.health.enter_graceful_shutdown()
    reply = await health.Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        (pb.ToolDefinition(name="has space"), "names may use only letters, digits"),
        (pb.ToolDefinition(name="x" * 65), "the limit is 64"),
        (
            pb.ToolDefinition(name="bad_schema", input_schema={"type": "object", "properties": 3}),
            "input_schema is not a valid JSON Schema",
        ),
    ],
)
async def test_register_rejects_bad_definitions_precisely(
    channel: grpc.aio.Channel, definition: pb.ToolDefinition, fragment: str
) -> None:
    stub = rpc.RegistryServiceStub(channel)
    provider = ProviderStream(stub)
    await provider.send(rpb.ProvideRequest(hello=rpb.ProviderHello(provider_name="p")))
    provider_id = (await provider.receive()).accepted.provider_id
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Register(rpb.RegisterRequest(definition=definition, provider_id=provider_id))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == "INVALID_DEFINITION"
    assert fragment in (caught.value.details() or "")
    ok = await stub.Dispatch(rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 1}'))
    assert ok.result.output == "2", "the server keeps serving"
    await provider.outgoing.put(None)


async def test_list_pages_and_bad_tokens(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    page = await stub.List(rpb.ListRequest(page_size=1))
    assert [t.name for t in page.tools] == ["add"] and page.next_page_token == ""
    assert page.registry_version >= 1 and page.etag == f"v{page.registry_version}"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.List(rpb.ListRequest(page_token="nope"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == "INVALID_PAGE"


async def test_watch_reports_a_providers_tools_coming_and_going(channel: grpc.aio.Channel) -> None:
    stub = rpc.RegistryServiceStub(channel)
    watch = stub.Watch(rpb.WatchRequest())
    synced = await asyncio.wait_for(watch.read(), 5)
    assert synced.kind == rpb.REGISTRY_EVENT_KIND_SYNCED
    provider = ProviderStream(stub)
    hello = rpb.ProviderHello(tools=[pb.ToolDefinition(name="w", parameters=[string_param("s")])])
    await provider.send(rpb.ProvideRequest(hello=hello))
    provider_id = (await provider.receive()).accepted.provider_id
    added = await asyncio.wait_for(watch.read(), 5)
    assert (added.kind, added.tool_name) == (rpb.REGISTRY_EVENT_KIND_TOOL_ADDED, "w")
    assert added.registry_version > synced.registry_version
    assert added.definition.input_schema_json
    await provider.outgoing.put(None)
    removed = await asyncio.wait_for(watch.read(), 5)
    gone = await asyncio.wait_for(watch.read(), 5)
    assert (removed.kind, removed.tool_name) == (rpb.REGISTRY_EVENT_KIND_TOOL_REMOVED, "w")
    assert (gone.kind, gone.provider_id) == (
        rpb.REGISTRY_EVENT_KIND_PROVIDER_DISCONNECTED,
        provider_id,
    )
    watch.cancel()
