"""The asyncio client against the scripted test double of the server (conftest),
and the blocking client's deadline against a throwaway sync server."""

from __future__ import annotations

import json
import queue
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from toolwire import convert
from toolwire.models import ErrorCode
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc
from toolwire.v1 import tool_pb2 as pb
from toolwire_client import (
    AsyncToolwireClient,
    CallContext,
    DuplicateToolError,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
    ToolwireClient,
    ToolwireRpcError,
)

SLACK = 0.5
"""Deadlines travel as absolute times: what the server sees can be a little off."""

ECHO = ToolDefinition(
    name="echo",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    safety_tier=SafetyTier.READ_ONLY,
)


@pytest.fixture
async def client(running_fake: Any) -> AsyncIterator[AsyncToolwireClient]:
    async with AsyncToolwireClient(
        running_fake.target, metadata=[("authorization", "Bearer t")], timeout=10.0
    ) as client:
        yield client


async def test_dispatch_sends_json_context_metadata_and_the_calls_deadline(
    fake: Any, client: AsyncToolwireClient
) -> None:
    failed = ToolResult.fail(ErrorCode.HANDLER_ERROR, "disk full")
    fake.answer("Dispatch", rpb.DispatchResponse(result=convert.result_to_proto(failed)))

    result = await client.dispatch(
        "echo", {"text": "hi"}, context=CallContext(session_id="s-1"), timeout=2.0
    )

    call = await fake.next_unary()
    assert call.request.name == "echo"
    assert json.loads(call.request.arguments_json) == {"text": "hi"}
    assert call.request.context == pb.CallContext(session_id="s-1")
    assert 0 < call.time_remaining <= 2.0 + SLACK
    assert ("authorization", "Bearer t") in call.metadata
    assert (result.success, result.error_code, result.error) == (
        False,
        ErrorCode.HANDLER_ERROR,
        "disk full",
    )


async def test_dispatch_defaults_to_the_clients_timeout(
    fake: Any, client: AsyncToolwireClient
) -> None:
    fake.answer("Dispatch", rpb.DispatchResponse(result=convert.result_to_proto(ToolResult.ok(""))))

    await client.dispatch("echo", '{"text": "raw"}')

    call = await fake.next_unary()
    assert call.request.arguments_json == '{"text": "raw"}'
    assert 2.0 + SLACK < call.time_remaining <= 10.0 + SLACK


async def test_list_sends_filters_and_reads_definitions(
    fake: Any, client: AsyncToolwireClient
) -> None:
    fake.answer("List", rpb.ListResponse(tools=[convert.definition_to_proto(ECHO)]))

    tools = await client.list(tier=SafetyTier.READ_ONLY, name_prefix="e")

    call = await fake.next_unary()
    assert call.request == rpb.ListRequest(safety_tier=pb.SAFETY_TIER_READ_ONLY, name_prefix="e")
    assert tools == [ECHO]


async def test_to_model_tools(fake: Any, client: AsyncToolwireClient) -> None:
    fake.answer("ToModelTools", rpb.ToModelToolsResponse(tools_json='[{"name": "echo"}]'))

    converted = await client.to_model_tools(ModelFormat.MCP)

    call = await fake.next_unary()
    assert call.request == rpb.ToModelToolsRequest(format=rpb.MODEL_FORMAT_MCP)
    assert converted.tools == [{"name": "echo"}]
    assert converted.diagnostics == []


async def test_management_errors_map_over_grpc_aio(fake: Any, client: AsyncToolwireClient) -> None:
    fake.fail(
        "Register",
        grpc.StatusCode.ALREADY_EXISTS,
        "tool 'echo' already exists",
        "DUPLICATE_TOOL",
        {"name": "echo", "suggestion": "echo_2"},
    )

    with pytest.raises(DuplicateToolError) as raised:
        await client.register(ECHO, "prov-1")

    assert (raised.value.name, raised.value.suggestion) == ("echo", "echo_2")


async def test_an_unreachable_server_is_an_rpc_error(
    running_fake: Any, client: AsyncToolwireClient
) -> None:
    await running_fake.server.stop(None)

    with pytest.raises(ToolwireRpcError) as raised:
        await client.dispatch("echo", {})

    assert raised.value.code is grpc.StatusCode.UNAVAILABLE


# the blocking client's deadline needs a real server: grpc_testing drops timeouts


class DeadlineRecorder(rpc.RegistryServiceServicer):
    def __init__(self) -> None:
        self.deadlines: queue.Queue[float | None] = queue.Queue()

    def Dispatch(self, request: Any, context: Any) -> Any:
        self.deadlines.put(context.time_remaining())
        return rpb.DispatchResponse(result=convert.result_to_proto(ToolResult.ok("")))


@pytest.fixture
def sync_server() -> Iterator[tuple[DeadlineRecorder, str]]:
    recorder = DeadlineRecorder()
    with ThreadPoolExecutor(max_workers=2) as pool:
        server = grpc.server(pool)
        rpc.add_RegistryServiceServicer_to_server(recorder, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            yield recorder, f"127.0.0.1:{port}"
        finally:
            server.stop(None).wait()


def test_sync_dispatch_timeout_is_the_calls_deadline(
    sync_server: tuple[DeadlineRecorder, str],
) -> None:
    recorder, target = sync_server
    with ToolwireClient(target, timeout=30.0) as client:
        client.dispatch("echo", {}, timeout=2.0)
        client.dispatch("echo", {})

    first, second = recorder.deadlines.get(timeout=5), recorder.deadlines.get(timeout=5)
    assert first is not None
    assert 0 < first <= 2.0 + SLACK
    assert second is not None
    assert 2.0 + SLACK < second <= 30.0 + SLACK
