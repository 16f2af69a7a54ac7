"""The blocking client's own logic: the requests it builds, how it reads the
answers, and how it maps failed calls. The test plays the server through
grpc_testing, so no network is involved."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import grpc_testing
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from toolwire import convert
from toolwire.models import ErrorCode
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb
from toolwire_client import (
    CallContext,
    Diagnostic,
    DuplicateToolError,
    InvalidDefinitionError,
    ModelFormat,
    NotOwnerError,
    SafetyTier,
    ToolDefinition,
    ToolNotFoundError,
    ToolResult,
    ToolwireClient,
    ToolwireRpcError,
)
from toolwire_client.errors import error_info

SERVICE = rpb.DESCRIPTOR.services_by_name["RegistryService"]
RESULT_TIMEOUT = 5.0
METADATA = (("authorization", "Bearer test-token"),)

ECHO = ToolDefinition(
    name="echo",
    description="Repeats its text.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    safety_tier=SafetyTier.READ_ONLY,
    group="demo",
    timeout_seconds=2.5,
    labels={"team": "tools"},
)


def rich_status(
    code: grpc.StatusCode,
    message: str,
    reason: str,
    metadata: dict[str, str] | None = None,
    domain: str = "toolwire",
) -> Any:
    """A grpc.Status carrying an ErrorInfo, as the real server reports management errors."""
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=domain, metadata=metadata or {}))
    return rpc_status.to_status(
        status_pb2.Status(code=code.value[0], message=message, details=[detail])
    )


class FakeServer:
    """Answers one client call at a time on a grpc_testing channel."""

    def __init__(self, channel: Any, pool: ThreadPoolExecutor) -> None:
        self.channel = channel
        self.pool = pool
        self.request: Any = None
        self.invocation_metadata: Sequence[tuple[str, str]] = ()

    def answer(
        self,
        call: Callable[[], Any],
        method: str,
        response: Any = None,
        *,
        status: Any = None,
    ) -> Any:
        """Runs `call` (a client method), answers its RPC and returns what the
        client returned (or raises what it raised)."""
        future = self.pool.submit(call)
        metadata, request, rpc = self.channel.take_unary_unary(SERVICE.methods_by_name[method])
        self.request, self.invocation_metadata = request, metadata
        if status is None:
            rpc.terminate(response, (), grpc.StatusCode.OK, "")
        else:
            rpc.terminate(None, status.trailing_metadata, status.code, status.details)
        return future.result(timeout=RESULT_TIMEOUT)


@pytest.fixture
def channel() -> Any:
    return grpc_testing.channel([SERVICE], grpc_testing.strict_real_time())


@pytest.fixture
def server(channel: Any) -> Iterator[FakeServer]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield FakeServer(channel, pool)


@pytest.fixture
def client(channel: Any) -> ToolwireClient:
    return ToolwireClient(channel=channel, metadata=METADATA, timeout=7.0)


# requests and responses


def test_register_sends_the_definition_and_returns_the_stored_one(
    server: FakeServer, client: ToolwireClient
) -> None:
    stored = ECHO.model_copy(update={"description": "stored"})
    response = rpb.RegisterResponse(definition=convert.definition_to_proto(stored))

    result = server.answer(lambda: client.register(ECHO, "prov-7"), "Register", response)

    assert server.request.provider_id == "prov-7"
    assert server.request.definition == convert.definition_to_proto(ECHO)
    assert result == stored
    assert ("authorization", "Bearer test-token") in server.invocation_metadata


def test_unregister_sends_the_name(server: FakeServer, client: ToolwireClient) -> None:
    result = server.answer(
        lambda: client.unregister("echo"), "Unregister", rpb.UnregisterResponse()
    )

    assert server.request == rpb.UnregisterRequest(name="echo")
    assert result is None


def test_list_without_filters_sends_an_empty_request(
    server: FakeServer, client: ToolwireClient
) -> None:
    response = rpb.ListResponse(tools=[convert.definition_to_proto(ECHO)])

    tools = server.answer(client.list, "List", response)

    assert server.request == rpb.ListRequest()
    assert tools == [ECHO]


def test_list_sends_the_filters(server: FakeServer, client: ToolwireClient) -> None:
    server.answer(
        lambda: client.list(group="demo", tier=SafetyTier.PRIVILEGED, name_prefix="ec"),
        "List",
        rpb.ListResponse(),
    )

    assert server.request == rpb.ListRequest(
        group="demo", safety_tier=pb.SAFETY_TIER_PRIVILEGED, name_prefix="ec"
    )


def test_dispatch_encodes_a_mapping_as_json_and_sends_the_context(
    server: FakeServer, client: ToolwireClient
) -> None:
    context = CallContext(caller_id="agent-1", session_id="s-9", user_id="u-3")
    response = rpb.DispatchResponse(
        result=convert.result_to_proto(ToolResult.ok("hi", {"echo": "hi"}))
    )

    result = server.answer(
        lambda: client.dispatch("echo", {"text": "hi", "n": [1, 2]}, context=context),
        "Dispatch",
        response,
    )

    assert server.request.name == "echo"
    assert json.loads(server.request.arguments_json) == {"text": "hi", "n": [1, 2]}
    assert server.request.context == pb.CallContext(
        caller_id="agent-1", session_id="s-9", user_id="u-3"
    )
    assert result.success
    assert result.output == "hi"
    assert result.structured_output == {"echo": "hi"}


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ('{"text": "as the model wrote it" }', '{"text": "as the model wrote it" }'),
        ('{"text": broken', '{"text": broken'),  # the server, not the client, judges JSON
        (None, ""),
    ],
)
def test_dispatch_passes_a_string_through_as_it_is(
    server: FakeServer, client: ToolwireClient, arguments: str | None, sent: str
) -> None:
    server.answer(
        lambda: client.dispatch("echo", arguments),
        "Dispatch",
        rpb.DispatchResponse(result=convert.result_to_proto(ToolResult.ok(""))),
    )

    assert server.request.arguments_json == sent
    assert not server.request.HasField("context")


def test_dispatch_returns_a_failed_result_without_raising(
    server: FakeServer, client: ToolwireClient
) -> None:
    failed = ToolResult.fail(ErrorCode.NOT_FOUND, "no tool named 'ehco'; did you mean 'echo'?")
    response = rpb.DispatchResponse(result=convert.result_to_proto(failed))

    result = server.answer(lambda: client.dispatch("ehco", {}), "Dispatch", response)

    assert not result.success
    assert result.error_code == failed.error_code
    assert result.error == "no tool named 'ehco'; did you mean 'echo'?"


def test_generate_stubs_sends_the_names(server: FakeServer, client: ToolwireClient) -> None:
    response = rpb.GenerateStubsResponse(typescript="export async function echo() {}")

    typescript = server.answer(
        lambda: client.generate_stubs(["echo", "b"]), "GenerateStubs", response
    )

    assert server.request == rpb.GenerateStubsRequest(names=["echo", "b"])
    assert typescript == "export async function echo() {}"


@pytest.mark.parametrize(
    ("fmt", "wire"),
    [
        ("openai_chat", rpb.MODEL_FORMAT_OPENAI_CHAT),
        (ModelFormat.GEMINI, rpb.MODEL_FORMAT_GEMINI),
        (ModelFormat.ANTHROPIC, rpb.MODEL_FORMAT_ANTHROPIC),
    ],
)
def test_to_model_tools_sends_the_format_and_parses_the_json(
    server: FakeServer, client: ToolwireClient, fmt: ModelFormat | str, wire: rpb.ModelFormat
) -> None:
    tools = [{"name": "echo", "input_schema": {"type": "object"}}]
    response = rpb.ToModelToolsResponse(
        tools_json=json.dumps(tools),
        diagnostics=[rpb.Diagnostic(tool_name="echo", path="/properties/x", message="dropped")],
    )

    converted = server.answer(
        lambda: client.to_model_tools(fmt, ["echo"]), "ToModelTools", response
    )

    assert server.request == rpb.ToModelToolsRequest(format=wire, names=["echo"])
    assert converted.tools == tools
    assert converted.diagnostics == [Diagnostic("echo", "/properties/x", "dropped")]


def test_to_model_tools_rejects_an_unknown_format_before_calling(client: ToolwireClient) -> None:
    with pytest.raises(ValueError, match="unknown model format 'claude'"):
        client.to_model_tools("claude")


# error mapping


def test_duplicate_tool_raises_with_the_suggested_name(
    server: FakeServer, client: ToolwireClient
) -> None:
    status = rich_status(
        grpc.StatusCode.ALREADY_EXISTS,
        "tool 'echo' already exists",
        "DUPLICATE_TOOL",
        {"name": "echo", "suggestion": "echo_2"},
    )

    with pytest.raises(DuplicateToolError) as raised:
        server.answer(lambda: client.register(ECHO, "prov-7"), "Register", status=status)

    assert raised.value.name == "echo"
    assert raised.value.suggestion == "echo_2"
    assert isinstance(raised.value.__cause__, grpc.RpcError)


def test_duplicate_tool_without_a_name_in_the_detail_names_the_requested_tool(
    server: FakeServer, client: ToolwireClient
) -> None:
    status = rich_status(
        grpc.StatusCode.ALREADY_EXISTS, "taken", "DUPLICATE_TOOL", {"suggestion": "echo_2"}
    )

    with pytest.raises(DuplicateToolError) as raised:
        server.answer(lambda: client.register(ECHO, "prov-7"), "Register", status=status)

    assert (raised.value.name, raised.value.suggestion) == ("echo", "echo_2")


def test_invalid_definition_raises_with_the_servers_reason(
    server: FakeServer, client: ToolwireClient
) -> None:
    message = "tool name 'bad name' must match ^[a-zA-Z0-9_-]{1,64}$"
    status = rich_status(grpc.StatusCode.INVALID_ARGUMENT, message, "INVALID_DEFINITION")

    with pytest.raises(InvalidDefinitionError, match=r"must match \^\[a-zA-Z0-9_-\]"):
        server.answer(lambda: client.register(ECHO, "prov-7"), "Register", status=status)


def test_tool_not_found_raises_with_the_name(server: FakeServer, client: ToolwireClient) -> None:
    status = rich_status(
        grpc.StatusCode.NOT_FOUND, "no tool named 'gone'", "TOOL_NOT_FOUND", {"name": "gone"}
    )

    with pytest.raises(ToolNotFoundError) as raised:
        server.answer(lambda: client.unregister("gone"), "Unregister", status=status)

    assert raised.value.name == "gone"


def test_not_owner_raises(server: FakeServer, client: ToolwireClient) -> None:
    status = rich_status(
        grpc.StatusCode.PERMISSION_DENIED, "registered by another provider", "NOT_OWNER"
    )

    with pytest.raises(NotOwnerError, match="another provider"):
        server.answer(lambda: client.unregister("echo"), "Unregister", status=status)


def test_other_reasons_raise_an_rpc_error_with_code_reason_and_details(
    server: FakeServer, client: ToolwireClient
) -> None:
    status = rich_status(
        grpc.StatusCode.FAILED_PRECONDITION, "no provider 'prov-7'", "PROVIDER_NOT_FOUND"
    )

    with pytest.raises(ToolwireRpcError) as raised:
        server.answer(lambda: client.register(ECHO, "prov-7"), "Register", status=status)

    assert raised.value.code is grpc.StatusCode.FAILED_PRECONDITION
    assert raised.value.reason == "PROVIDER_NOT_FOUND"
    assert raised.value.details == "no provider 'prov-7'"


class PlainStatus:
    def __init__(self, code: grpc.StatusCode, details: str, trailing: Any = ()) -> None:
        self.code, self.details, self.trailing_metadata = code, details, trailing


@pytest.mark.parametrize(
    "status",
    [
        PlainStatus(grpc.StatusCode.UNAVAILABLE, "connection refused"),
        rich_status(grpc.StatusCode.NOT_FOUND, "x", "DUPLICATE_TOOL", domain="elsewhere"),
        PlainStatus(
            grpc.StatusCode.INTERNAL,
            "boom",
            (("grpc-status-details-bin", b"\xff not a status"),),
        ),
    ],
    ids=["no-detail", "foreign-domain", "garbled-detail"],
)
def test_statuses_without_a_toolwire_detail_raise_an_rpc_error(
    server: FakeServer, client: ToolwireClient, status: Any
) -> None:
    with pytest.raises(ToolwireRpcError) as raised:
        server.answer(lambda: client.register(ECHO, "prov-7"), "Register", status=status)

    assert raised.value.code is status.code
    assert raised.value.details == status.details
    assert raised.value.reason == ""


def test_dispatch_raises_only_rpc_errors_for_transport_problems(
    server: FakeServer, client: ToolwireClient
) -> None:
    status = rich_status(
        grpc.StatusCode.NOT_FOUND, "no tool named 'x'", "TOOL_NOT_FOUND", {"name": "x"}
    )

    with pytest.raises(ToolwireRpcError) as raised:
        server.answer(lambda: client.dispatch("x", {}), "Dispatch", status=status)

    assert raised.value.code is grpc.StatusCode.NOT_FOUND
    assert raised.value.reason == "TOOL_NOT_FOUND"


def test_error_info_ignores_other_trailers() -> None:
    status = rich_status(grpc.StatusCode.ALREADY_EXISTS, "m", "DUPLICATE_TOOL", {"name": "a"})
    trailing = (("x-other", "v"), *status.trailing_metadata)

    info = error_info(trailing)

    assert info is not None
    assert info.reason == "DUPLICATE_TOOL"
    assert error_info(None) is None


# the channel


class RecordingChannel:
    def __init__(self) -> None:
        self.closed = False

    def unary_unary(self, *args: Any, **kwargs: Any) -> None:
        return None

    stream_stream = unary_stream = unary_unary

    def close(self) -> None:
        self.closed = True


def test_close_leaves_a_channel_it_was_given_open() -> None:
    channel = RecordingChannel()

    with ToolwireClient(channel=channel):
        pass

    assert not channel.closed
