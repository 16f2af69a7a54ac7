"""The HTTP listener through the connectrpc Python client, over gRPC-web and
Connect (binary and JSON): run tokens, grants, and the same translation as
the gRPC servicer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2
from toolwire.capabilities import RunGrant
from toolwire.models import ErrorCode
from toolwire.server import ToolwireServers
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb
from toolwire.v1.registry_service_connect import RegistryServiceClient

Issue = Callable[..., tuple[str, RunGrant]]

PROTOCOLS = {
    "grpc-web": (ProtocolType.GRPC_WEB, google_protobuf_binary_codec()),
    "connect-proto": (ProtocolType.CONNECT, google_protobuf_binary_codec()),
    "connect-json": (ProtocolType.CONNECT, google_protobuf_json_codec()),
}


@pytest.fixture(params=list(PROTOCOLS))
async def client(
    request: pytest.FixtureRequest, base_url: str
) -> AsyncIterator[RegistryServiceClient]:
    protocol, codec = PROTOCOLS[request.param]
    async with RegistryServiceClient(base_url, protocol=protocol, codec=codec) as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def error_info(error: ConnectError) -> error_details_pb2.ErrorInfo:
    (detail,) = error.details
    assert detail.type_name == "google.rpc.ErrorInfo"
    info = error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
    assert info.domain == "toolwire"
    return info


async def test_dispatch_success_and_failures_are_ok_rpcs(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, grant = issue()
    ok = await client.dispatch(
        rpb.DispatchRequest(name="add", arguments_json='{"a": 2, "b": 3}'), headers=bearer(token)
    )
    assert ok.result.success and ok.result.output == "5"
    assert ok.result.structured_output.number_value == 5
    invalid = await client.dispatch(
        rpb.DispatchRequest(name="add", arguments_json='{"a": 2}'), headers=bearer(token)
    )
    assert not invalid.result.success
    assert invalid.result.error_code == pb.ERROR_CODE_INVALID_ARGUMENTS
    assert "missing required field 'b'" in invalid.result.error
    failed = await client.dispatch(
        rpb.DispatchRequest(name="explode", arguments_json='{"text": "x"}'), headers=bearer(token)
    )
    assert failed.result.error_code == pb.ERROR_CODE_HANDLER_ERROR
    assert "cannot handle 'x'" in failed.result.error
    missing = await client.dispatch(rpb.DispatchRequest(name="nope"), headers=bearer(token))
    assert missing.result.error_code == pb.ERROR_CODE_NOT_FOUND
    assert [c.name for c in grant.calls] == ["add", "add", "explode", "nope"]


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "TOKEN_MISSING"),
        ({"authorization": ""}, "TOKEN_MISSING"),
        ({"authorization": "Basic dXNlcjpwYXNz"}, "TOKEN_MALFORMED"),
        ({"authorization": "Bearer "}, "TOKEN_MALFORMED"),
        ({"authorization": "Bearer not-a-token"}, "TOKEN_INVALID"),
    ],
)
async def test_calls_without_a_valid_token_are_unauthenticated(
    client: RegistryServiceClient, issue: Issue, headers: dict[str, str], reason: str
) -> None:
    issue()  # a live token exists; the request just does not carry it
    with pytest.raises(ConnectError) as caught:
        await client.dispatch(rpb.DispatchRequest(name="add", arguments_json="{}"), headers=headers)
    assert caught.value.code is Code.UNAUTHENTICATED
    assert "token" in caught.value.message
    assert error_info(caught.value).reason == reason


async def test_bearer_scheme_is_case_insensitive(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, _ = issue()
    reply = await client.list(rpb.ListRequest(), headers={"authorization": f"bearer  {token} "})
    assert reply.tools


async def test_expired_and_revoked_tokens_are_unauthenticated(
    client: RegistryServiceClient, issue: Issue, clock: Any, servers: ToolwireServers
) -> None:
    expiring, _ = issue(ttl_seconds=10)
    revoked, _ = issue()
    servers.capabilities.revoke(revoked)
    await client.list(rpb.ListRequest(), headers=bearer(expiring))
    clock.offset = 11
    for token in (expiring, revoked):
        with pytest.raises(ConnectError) as caught:
            await client.list(rpb.ListRequest(), headers=bearer(token))
        assert caught.value.code is Code.UNAUTHENTICATED
        assert caught.value.message == "the token is unknown, revoked or expired"
        assert error_info(caught.value).reason == "TOKEN_INVALID"


async def test_every_method_needs_a_token(client: RegistryServiceClient) -> None:
    calls: list[Any] = [
        client.list(rpb.ListRequest()),
        client.generate_stubs(rpb.GenerateStubsRequest()),
        client.to_model_tools(rpb.ToModelToolsRequest(format=rpb.MODEL_FORMAT_ANTHROPIC)),
        client.register(rpb.RegisterRequest()),
        client.unregister(rpb.UnregisterRequest(name="add")),
    ]
    for call in calls:
        with pytest.raises(ConnectError) as caught:
            await call
        assert caught.value.code is Code.UNAUTHENTICATED


async def test_tools_outside_the_grant_are_denied_by_policy(
    client: RegistryServiceClient, issue: Issue
) -> None:
    default_token, _ = issue()
    recursive = await client.dispatch(
        rpb.DispatchRequest(name="execute_code", arguments_json='{"text": "x"}'),
        headers=bearer(default_token),
    )
    assert not recursive.result.success
    assert recursive.result.error_code == pb.ERROR_CODE_DENIED_BY_POLICY
    assert "may not call 'execute_code'" in recursive.result.error

    narrow_token, narrow_grant = issue(allowed=frozenset({"add"}))
    denied = await client.dispatch(
        rpb.DispatchRequest(name="text_stats", arguments_json='{"text": "x"}'),
        headers=bearer(narrow_token),
    )
    assert denied.result.error_code == pb.ERROR_CODE_DENIED_BY_POLICY
    assert [(c.name, c.error_code) for c in narrow_grant.calls] == [
        ("text_stats", ErrorCode.DENIED_BY_POLICY)
    ]
    assert narrow_grant.used == 0  # refused calls do not spend the budget


async def test_budget_exhausted_is_a_resource_exhausted_result(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, grant = issue(budget=2)
    for _ in range(2):
        reply = await client.dispatch(
            rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 1}'),
            headers=bearer(token),
        )
        assert reply.result.success
    over = await client.dispatch(
        rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 1}'), headers=bearer(token)
    )
    assert not over.result.success
    assert over.result.error_code == pb.ERROR_CODE_RESOURCE_EXHAUSTED
    assert "budget of 2 tool calls" in over.result.error
    assert grant.used == 2
    assert [c.success for c in grant.calls] == [True, True, False]


async def test_nested_calls_are_recorded_and_act_for_whoever_started_the_run(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, grant = issue()
    reply = await client.dispatch(
        rpb.DispatchRequest(
            name="whoami",
            arguments_json="{}",
            # Code cannot claim another identity: the grant's context wins.
            context=pb.CallContext(user_id="mallory", session_id="other"),
        ),
        headers=bearer(token),
        timeout_ms=5000,
    )
    output = json.loads(reply.result.output)
    assert output["user_id"] == "alice" and output["session_id"] == "s1"
    # The caller's deadline (not the tool's 30 s default) bounds the call.
    assert 3.0 < output["seconds_left"] <= 5.0
    (call,) = grant.calls
    assert call.name == "whoami" and call.success and call.error_code is None
    assert call.duration_seconds > 0


async def test_list_shows_only_granted_tools(client: RegistryServiceClient, issue: Issue) -> None:
    default_token, _ = issue()
    everything = await client.list(rpb.ListRequest(), headers=bearer(default_token))
    assert [t.name for t in everything.tools] == [
        "add",
        "explode",
        "slow",
        "text_stats",
        "whoami",
    ]
    narrow_token, _ = issue(allowed=frozenset({"add", "text_stats", "whoami"}))
    narrow = await client.list(rpb.ListRequest(), headers=bearer(narrow_token))
    assert [t.name for t in narrow.tools] == ["add", "text_stats", "whoami"]
    text = await client.list(rpb.ListRequest(group="text"), headers=bearer(narrow_token))
    assert [t.name for t in text.tools] == ["text_stats"]
    (add,) = (
        await client.list(rpb.ListRequest(name_prefix="ad"), headers=bearer(narrow_token))
    ).tools
    assert add.group == "math" and add.input_schema.fields["required"].list_value.values


async def test_stubs_and_model_tools_cover_only_granted_tools(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, _ = issue(allowed=frozenset({"add", "whoami"}))
    stubs = await client.generate_stubs(rpb.GenerateStubsRequest(), headers=bearer(token))
    assert "async function add(" in stubs.typescript
    assert "async function whoami(" in stubs.typescript
    assert "text_stats" not in stubs.typescript and "execute_code" not in stubs.typescript
    tools = await client.to_model_tools(
        rpb.ToModelToolsRequest(format=rpb.MODEL_FORMAT_ANTHROPIC), headers=bearer(token)
    )
    assert [t["name"] for t in json.loads(tools.tools_json)] == ["add", "whoami"]

    with pytest.raises(ConnectError) as caught:
        await client.generate_stubs(
            rpb.GenerateStubsRequest(names=["add", "text_stats"]), headers=bearer(token)
        )
    assert caught.value.code is Code.PERMISSION_DENIED
    info = error_info(caught.value)
    assert info.reason == "DENIED_BY_POLICY" and info.metadata["name"] == "text_stats"

    nothing_token, _ = issue(allowed=frozenset())
    empty = await client.generate_stubs(rpb.GenerateStubsRequest(), headers=bearer(nothing_token))
    assert "async function" not in empty.typescript
    no_tools = await client.to_model_tools(
        rpb.ToModelToolsRequest(format=rpb.MODEL_FORMAT_MCP), headers=bearer(nothing_token)
    )
    assert json.loads(no_tools.tools_json) == []


async def test_management_errors_carry_the_same_error_info_as_over_grpc(
    client: RegistryServiceClient, issue: Issue
) -> None:
    token, _ = issue(allowed=frozenset({"add", "ghost"}))
    with pytest.raises(ConnectError) as caught:
        await client.generate_stubs(
            rpb.GenerateStubsRequest(names=["ghost"]), headers=bearer(token)
        )
    assert caught.value.code is Code.NOT_FOUND
    info = error_info(caught.value)
    assert info.reason == "TOOL_NOT_FOUND" and info.metadata["name"] == "ghost"
    with pytest.raises(ConnectError) as bad_format:
        await client.to_model_tools(rpb.ToModelToolsRequest(), headers=bearer(token))
    assert bad_format.value.code is Code.INVALID_ARGUMENT
    assert "format must be one of" in bad_format.value.message


async def test_run_tokens_cannot_change_the_registry(
    client: RegistryServiceClient, issue: Issue, servers: ToolwireServers
) -> None:
    token, _ = issue()
    definition = pb.ToolDefinition(
        name="sneaky",
        parameters=[pb.ToolParameter(name="x", type=pb.PARAMETER_TYPE_STRING)],
    )
    calls: list[Any] = [
        client.register(rpb.RegisterRequest(definition=definition), headers=bearer(token)),
        client.unregister(rpb.UnregisterRequest(name="add"), headers=bearer(token)),
    ]
    for call in calls:
        with pytest.raises(ConnectError) as caught:
            await call
        assert caught.value.code is Code.PERMISSION_DENIED
        assert "that needs the 'register' scope" in caught.value.message
        assert error_info(caught.value).reason == "SCOPE_MISSING"
    assert servers.registry.get("add") is not None
    assert servers.registry.get("sneaky") is None


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "identity"])
async def test_oversize_requests_are_refused(
    base_url: str, issue: Issue, max_message_bytes: int, compressed: bool
) -> None:
    """Above the configured size, raw or (a highly compressible body) once inflated."""
    token, grant = issue()
    big = json.dumps({"text": "x" * max_message_bytes})
    for protocol, codec in PROTOCOLS.values():
        async with RegistryServiceClient(
            base_url,
            protocol=protocol,
            codec=codec,
            send_compression=GzipCompression() if compressed else None,
        ) as c:
            with pytest.raises(ConnectError) as caught:
                await c.dispatch(
                    rpb.DispatchRequest(name="text_stats", arguments_json=big),
                    headers=bearer(token),
                )
            assert caught.value.code is Code.RESOURCE_EXHAUSTED, (protocol, codec.name())
            assert str(max_message_bytes) in caught.value.message
    assert grant.calls == []  # refused before dispatch
