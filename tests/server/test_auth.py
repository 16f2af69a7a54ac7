"""Authentication, scopes, run tokens, development mode, provider ownership and
the message size limit, on both listeners of a real `ToolwireServers` (loopback
sockets, port 0).

The gRPC listener is called with raw generated stubs (so the status, the
`ErrorInfo` reason and its metadata are what travelled), the HTTP listener
with connectrpc's client over gRPC-web and Connect. Every caller is a token of
the configuration, a run token issued by the servers' own `Capabilities`, or
nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2, status_pb2
from toolwire import convert
from toolwire.approvals import ApprovalBook
from toolwire.auth import Authenticator, Principal
from toolwire.capabilities import Capabilities
from toolwire.models import CallContext, SafetyTier, ToolDefinition
from toolwire.policy.config import parse_config, token_entries
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.server import InsecureBindError, ServerConfig, ToolwireServers
from toolwire.tools import Tool, ToolContext
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc
from toolwire.v1 import tool_pb2 as pb
from toolwire.v1.registry_service_connect import RegistryServiceClient
from toolwire_client import AsyncToolwireClient, ToolwireRpcError

MAX_MESSAGE_BYTES = 64 * 1024
WAIT = 10.0

TOKENS = {
    "AGENT_TOKEN": "agent-secret",
    "ALICE_TOKEN": "alice-secret",
    "BOB_TOKEN": "bob-secret",
    "ADMIN_TOKEN": "admin-secret",
}

CONFIG: dict[str, Any] = {
    "auth": {
        "tokens": [
            {
                "principal": "agent",
                "scopes": ["dispatch"],
                "policy": "agents",
                "token_env": "AGENT_TOKEN",
            },
            {"principal": "alice", "scopes": ["register"], "token_env": "ALICE_TOKEN"},
            {"principal": "bob", "scopes": ["register"], "token_env": "BOB_TOKEN"},
            {"principal": "admin", "scopes": ["admin"], "token_env": "ADMIN_TOKEN"},
        ]
    },
    "policies": {"agents": {"deny_groups": ["vault"]}},
}

OBJECT = {"type": "object", "properties": {}}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


async def _add(arguments: Any, context: ToolContext) -> int:
    return int(arguments["a"]) + int(arguments["b"])


async def _whoami(arguments: Any, context: ToolContext) -> dict[str, Any]:
    principal = context.principal
    return {
        "principal": principal.name,
        "scopes": sorted(principal.scopes),
        "run": principal.run.run_id if principal.run is not None else "",
    }


async def _text(arguments: Any, context: ToolContext) -> str:
    return f"{context.tool_name}:{len(arguments.get('text', ''))}"


def builtin_tools() -> list[Tool]:
    """What the server registers itself (no principal owns them)."""
    ro = SafetyTier.READ_ONLY
    return [
        Tool.of(
            ToolDefinition(name="add", group="math", safety_tier=ro, input_schema=ADD_SCHEMA), _add
        ),
        Tool.of(ToolDefinition(name="whoami", safety_tier=ro, input_schema=OBJECT), _whoami),
        Tool.of(
            ToolDefinition(name="secret_dump", group="vault", safety_tier=ro, input_schema=OBJECT),
            _text,
        ),
        Tool.of(ToolDefinition(name="deploy", requires_approval=True, input_schema=OBJECT), _text),
        Tool.of(ToolDefinition(name="echo", input_schema=TEXT_SCHEMA), _text),
    ]


def bearer(token: str) -> str:
    return f"Bearer {token}"


@dataclass
class Stack:
    servers: ToolwireServers
    authenticator: Authenticator
    pending_ticket: str
    """An approval ticket of agent's, pending from the start."""
    channel: grpc.aio.Channel
    stub: rpc.RegistryServiceStub
    clients: dict[str, AsyncToolwireClient] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.servers.grpc.port}"

    @property
    def registry(self) -> ToolRegistry:
        return self.servers.registry

    def principal(self, name: str) -> Principal:
        """The principal a configured token stands for, as the server resolves it."""
        return self.authenticator.authenticate(bearer(TOKENS[f"{name.upper()}_TOKEN"]))

    def client(self, name: str) -> AsyncToolwireClient:
        if name not in self.clients:
            token = TOKENS[f"{name.upper()}_TOKEN"]
            self.clients[name] = AsyncToolwireClient(self.target, token=token, timeout=WAIT)
        return self.clients[name]


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    config = parse_config(CONFIG)
    approvals = ApprovalBook(ttl_seconds=600)
    registry = ToolRegistry(policy=PolicyEngine(config, approvals=approvals))
    for tool in builtin_tools():
        registry.register(tool)
    capabilities = Capabilities()
    authenticator = Authenticator(token_entries(config, TOKENS), capabilities=capabilities)
    servers = ToolwireServers(
        registry,
        ServerConfig(port=0, http_port=0, grace_seconds=0, max_message_bytes=MAX_MESSAGE_BYTES),
        capabilities=capabilities,
        authenticator=authenticator,
    )
    await servers.start()
    agent = authenticator.authenticate(bearer(TOKENS["AGENT_TOKEN"]))
    pending = await registry.dispatch("deploy", "{}", CallContext(), principal=agent)
    assert pending.approval is not None, pending
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{servers.grpc.port}")
    stack = Stack(
        servers,
        authenticator,
        pending.approval.ticket_id,
        channel,
        rpc.RegistryServiceStub(channel),
    )
    try:
        yield stack
    finally:
        for client in stack.clients.values():
            await client.close()
        await channel.close()
        await servers.stop(0)
        approvals.close()
        registry.close()


# -- one way to call an RPC on either listener -------------------------------------


@dataclass
class Outcome:
    code: str
    """"OK" or the status code's name (the same names on both listeners)."""
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    message: Any = None
    """The (first) response message when the call succeeded."""
    details: str = ""


STREAMS = {"Watch", "WatchApprovals"}
CONNECT_NAMES = {
    "Dispatch": "dispatch",
    "List": "list",
    "Register": "register",
    "Unregister": "unregister",
    "Approve": "approve",
    "Watch": "watch",
    "WatchApprovals": "watch_approvals",
}


def _grpc_error_info(error: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo | None:
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    if raw is None:
        return None
    info = error_details_pb2.ErrorInfo()
    assert status_pb2.Status.FromString(raw).details[0].Unpack(info)
    assert info.domain == "toolwire"
    return info


def _connect_error_info(error: ConnectError) -> error_details_pb2.ErrorInfo | None:
    if not error.details:
        return None
    (detail,) = error.details
    assert detail.type_name == "google.rpc.ErrorInfo"
    info = error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
    assert info.domain == "toolwire"
    return info


class GrpcListener:
    name = "grpc"

    def __init__(self, stack: Stack) -> None:
        self._stub = stack.stub

    async def call(self, method: str, request: Any, authorization: str | None) -> Outcome:
        metadata = () if authorization is None else (("authorization", authorization),)
        try:
            if method in STREAMS:
                stream = getattr(self._stub, method)(request, metadata=metadata, timeout=WAIT)
                try:
                    first = await stream.read()
                finally:
                    stream.cancel()
                assert first is not grpc.aio.EOF
                return Outcome("OK", message=first)
            reply = await getattr(self._stub, method)(request, metadata=metadata, timeout=WAIT)
            return Outcome("OK", message=reply)
        except grpc.aio.AioRpcError as e:
            info = _grpc_error_info(e)
            return Outcome(
                e.code().name,
                info.reason if info else "",
                dict(info.metadata) if info else {},
                details=e.details() or "",
            )


class HttpListener:
    def __init__(self, name: str, client: RegistryServiceClient) -> None:
        self.name = name
        self._client = client

    async def call(self, method: str, request: Any, authorization: str | None) -> Outcome:
        headers = {} if authorization is None else {"authorization": authorization}
        function = getattr(self._client, CONNECT_NAMES[method])
        try:
            if method in STREAMS:
                stream = function(request, headers=headers, timeout_ms=int(WAIT * 1000))
                async with contextlib.aclosing(stream):
                    first = await anext(aiter(stream))
                return Outcome("OK", message=first)
            reply = await function(request, headers=headers, timeout_ms=int(WAIT * 1000))
            return Outcome("OK", message=reply)
        except ConnectError as e:
            info = _connect_error_info(e)
            return Outcome(
                e.code.name,
                info.reason if info else "",
                dict(info.metadata) if info else {},
                details=e.message,
            )


Listener = GrpcListener | HttpListener

HTTP_PROTOCOLS = {
    "grpc-web": (ProtocolType.GRPC_WEB, google_protobuf_binary_codec()),
    "connect-proto": (ProtocolType.CONNECT, google_protobuf_binary_codec()),
    "connect-json": (ProtocolType.CONNECT, google_protobuf_json_codec()),
}


@pytest.fixture(params=["grpc", *HTTP_PROTOCOLS])
async def listener(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[Listener]:
    """Each listener, and the HTTP one in each of its protocols."""
    if request.param == "grpc":
        yield GrpcListener(stack)
        return
    protocol, codec = HTTP_PROTOCOLS[request.param]
    async with RegistryServiceClient(
        stack.servers.http_base_url, protocol=protocol, codec=codec
    ) as client:
        yield HttpListener(request.param, client)


def definition(name: str, description: str = "") -> pb.ToolDefinition:
    return convert.definition_to_proto(
        ToolDefinition(name=name, description=description, input_schema=TEXT_SCHEMA)
    )


def requests(stack: Stack) -> dict[str, Any]:
    """One request per RPC under test; each passes authorization and then does
    something observable (a result, a first stream message, a handler error)."""
    return {
        "Dispatch": rpb.DispatchRequest(name="add", arguments_json='{"a": 2, "b": 3}'),
        "List": rpb.ListRequest(),
        "Register": rpb.RegisterRequest(provider_id="no-such-provider", definition=definition("x")),
        "Approve": rpb.ApproveRequest(ticket_id=stack.pending_ticket, reason="ok"),
        "WatchApprovals": rpb.WatchApprovalsRequest(),
        "Watch": rpb.WatchRequest(),
    }


METHODS = ["Dispatch", "List", "Register", "Approve", "WatchApprovals", "Watch"]


# -- authentication ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (None, "TOKEN_MISSING"),
        ("", "TOKEN_MISSING"),
        ("Basic YWRtaW46YWRtaW4=", "TOKEN_MALFORMED"),
        ("Bearer", "TOKEN_MALFORMED"),
        ("Bearer ", "TOKEN_MALFORMED"),
        ("admin-secret", "TOKEN_MALFORMED"),
        ("Bearer not-a-token", "TOKEN_INVALID"),
        ("Bearer admin-secret-but-longer", "TOKEN_INVALID"),
    ],
    ids=["absent", "empty", "basic", "bare-scheme", "scheme-only", "no-scheme", "unknown", "near"],
)
async def test_calls_without_a_valid_token_are_unauthenticated(
    stack: Stack, listener: Listener, authorization: str | None, reason: str
) -> None:
    version = stack.registry.version
    for method in METHODS:
        outcome = await listener.call(method, requests(stack)[method], authorization)
        where = (listener.name, method, outcome)
        assert (outcome.code, outcome.reason) == ("UNAUTHENTICATED", reason), where
        assert "token" in outcome.details or "authorization" in outcome.details, where
        assert "admin-secret" not in outcome.details, where
    # Nothing happened on the caller's behalf.
    assert stack.registry.version == version
    ticket = stack.registry.policy.approvals.get(stack.pending_ticket)  # type: ignore[union-attr]
    assert ticket is not None and ticket.state.value == "pending"


# What each principal gets from each RPC: "OK", a handler's reason (it was let
# through), or the scope it lacks.
SCOPE_MATRIX: dict[str, dict[str, str]] = {
    "agent": {  # dispatch
        "Dispatch": "OK",
        "List": "OK",
        "Watch": "OK",
        "Register": "scope:register",
        "WatchApprovals": "scope:admin",
        "Approve": "scope:admin",
    },
    "alice": {  # register
        "Dispatch": "scope:dispatch",
        "List": "OK",
        "Watch": "OK",
        "Register": "PROVIDER_NOT_FOUND",
        "WatchApprovals": "scope:admin",
        "Approve": "scope:admin",
    },
    "admin": {  # admin implies the rest
        "Dispatch": "OK",
        "List": "OK",
        "Watch": "OK",
        "Register": "PROVIDER_NOT_FOUND",
        "WatchApprovals": "OK",  # before Approve: the ticket is still pending
        "Approve": "OK",
    },
}


@pytest.mark.parametrize("principal", list(SCOPE_MATRIX))
async def test_scopes_decide_which_rpcs_a_token_may_use(
    stack: Stack, listener: Listener, principal: str
) -> None:
    token = TOKENS[f"{principal.upper()}_TOKEN"]
    for method, expected in SCOPE_MATRIX[principal].items():
        outcome = await listener.call(method, requests(stack)[method], bearer(token))
        where = (listener.name, principal, method, outcome)
        if expected == "OK":
            assert outcome.code == "OK", where
        elif expected.startswith("scope:"):
            scope = expected.removeprefix("scope:")
            assert (outcome.code, outcome.reason) == ("PERMISSION_DENIED", "SCOPE_MISSING"), where
            assert outcome.metadata == {"principal": principal, "scope": scope}, where
            assert f"needs the '{scope}' scope" in outcome.details, where
        else:
            assert outcome.reason == expected, where  # past authorization, into the handler


async def test_what_an_authorized_call_returns(stack: Stack, listener: Listener) -> None:
    """The OK cells of the matrix, looked at: real results, not just no error."""
    agent, admin = bearer(TOKENS["AGENT_TOKEN"]), bearer(TOKENS["ADMIN_TOKEN"])
    added = await listener.call("Dispatch", requests(stack)["Dispatch"], agent)
    assert added.message.result.success and added.message.result.output == "5"
    who = await listener.call(
        "Dispatch", rpb.DispatchRequest(name="whoami", arguments_json="{}"), admin
    )
    assert json.loads(who.message.result.output) == {
        "principal": "admin",
        "scopes": ["admin"],
        "run": "",
    }
    synced = await listener.call("Watch", rpb.WatchRequest(), agent)
    assert synced.message.kind == rpb.REGISTRY_EVENT_KIND_SYNCED
    pending = await listener.call("WatchApprovals", rpb.WatchApprovalsRequest(), admin)
    assert pending.message.ticket.ticket_id == stack.pending_ticket
    approved = await listener.call("Approve", requests(stack)["Approve"], admin)
    assert approved.message.ticket.ticket_id == stack.pending_ticket
    assert approved.message.ticket.decided_by == "admin"


async def test_the_policy_of_a_token_applies_to_what_it_lists_and_dispatches(
    stack: Stack, listener: Listener
) -> None:
    agent, admin = bearer(TOKENS["AGENT_TOKEN"]), bearer(TOKENS["ADMIN_TOKEN"])
    listed = await listener.call("List", rpb.ListRequest(), agent)
    assert {t.name for t in listed.message.tools} == {"add", "whoami", "deploy", "echo"}
    everything = await listener.call("List", rpb.ListRequest(), admin)
    assert "secret_dump" in {t.name for t in everything.message.tools}
    denied = await listener.call(
        "Dispatch", rpb.DispatchRequest(name="secret_dump", arguments_json="{}"), agent
    )
    assert denied.code == "OK"  # a denial is a result, not a failed RPC
    assert denied.message.result.error_code == pb.ERROR_CODE_DENIED_BY_POLICY
    assert denied.message.result.policy_rule == "policies.agents.deny_groups[0]"


# -- run tokens: principals of the same system --------------------------------------


async def test_a_run_token_acts_for_its_starter_with_dispatch_only(
    stack: Stack, listener: Listener
) -> None:
    token, grant = stack.servers.capabilities.issue(
        "run-7", context=CallContext(user_id="u1"), principal=stack.principal("agent")
    )
    run = bearer(token)
    who = await listener.call(
        "Dispatch", rpb.DispatchRequest(name="whoami", arguments_json="{}"), run
    )
    assert json.loads(who.message.result.output) == {
        "principal": "agent",
        "scopes": ["dispatch"],
        "run": "run-7",
    }
    # The starter's policy: what it denies is denied to the run, and hidden from it.
    denied = await listener.call(
        "Dispatch", rpb.DispatchRequest(name="secret_dump", arguments_json="{}"), run
    )
    assert denied.message.result.error_code == pb.ERROR_CODE_DENIED_BY_POLICY
    assert denied.message.result.policy_rule == "policies.agents.deny_groups[0]"
    listed = await listener.call("List", rpb.ListRequest(), run)
    names = {t.name for t in listed.message.tools}
    assert "add" in names and "secret_dump" not in names
    # Dispatch scope only.
    for method in ("Register", "Approve", "WatchApprovals"):
        outcome = await listener.call(method, requests(stack)[method], run)
        assert (outcome.code, outcome.reason) == ("PERMISSION_DENIED", "SCOPE_MISSING"), outcome
        assert outcome.metadata["principal"] == "agent"
    assert [c.name for c in grant.calls] == ["whoami", "secret_dump"]


async def test_a_run_started_by_an_admin_is_no_admin(stack: Stack, listener: Listener) -> None:
    token, _ = stack.servers.capabilities.issue(
        "run-8", context=CallContext(), principal=stack.principal("admin")
    )
    run = bearer(token)
    allowed = await listener.call(
        "Dispatch", rpb.DispatchRequest(name="secret_dump", arguments_json="{}"), run
    )
    assert allowed.message.result.success  # the default policy of 'admin' allows it
    for method, request in [
        ("Approve", requests(stack)["Approve"]),
        ("Unregister", rpb.UnregisterRequest(name="add")),
    ]:
        outcome = await listener.call(method, request, run)
        assert (outcome.code, outcome.reason) == ("PERMISSION_DENIED", "SCOPE_MISSING"), outcome
        assert outcome.metadata == {
            "principal": "admin",
            "scope": "admin" if method == "Approve" else "register",
        }
    assert stack.registry.get("add") is not None


async def test_a_revoked_run_token_is_unknown(stack: Stack, listener: Listener) -> None:
    token, _ = stack.servers.capabilities.issue(
        "run-9", context=CallContext(), principal=stack.principal("agent")
    )
    assert (await listener.call("List", rpb.ListRequest(), bearer(token))).code == "OK"
    stack.servers.capabilities.revoke(token)
    outcome = await listener.call("List", rpb.ListRequest(), bearer(token))
    assert (outcome.code, outcome.reason) == ("UNAUTHENTICATED", "TOKEN_INVALID")


# -- development mode --------------------------------------------------------------


@pytest.fixture
async def dev_servers() -> AsyncIterator[ToolwireServers]:
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    servers = ToolwireServers(registry, ServerConfig(port=0, http_port=0, grace_seconds=0))
    await servers.start()
    try:
        yield servers
    finally:
        await servers.stop(0)
        registry.close()


async def test_development_mode_serves_anonymous_grpc_callers_as_local(
    dev_servers: ToolwireServers,
) -> None:
    assert dev_servers.development
    async with grpc.aio.insecure_channel(f"127.0.0.1:{dev_servers.grpc.port}") as channel:
        stub = rpc.RegistryServiceStub(channel)
        reply = await stub.Dispatch(rpb.DispatchRequest(name="whoami", arguments_json="{}"))
        assert json.loads(reply.result.output) == {
            "principal": "local",
            "scopes": ["admin", "dispatch", "register"],
            "run": "",
        }
        await stub.Unregister(rpb.UnregisterRequest(name="echo"))  # local may do anything
        assert dev_servers.registry.get("echo") is None
        # A token nobody issued is still refused: anonymity is for absent headers only.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.List(rpb.ListRequest(), metadata=(("authorization", "Bearer guess"),))
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        info = _grpc_error_info(caught.value)
        assert info is not None and info.reason == "TOKEN_INVALID"


@pytest.mark.parametrize("protocol", list(HTTP_PROTOCOLS))
async def test_development_mode_http_listener_is_never_anonymous(
    dev_servers: ToolwireServers, protocol: str
) -> None:
    kind, codec = HTTP_PROTOCOLS[protocol]
    token, _ = dev_servers.capabilities.issue("run-1", context=CallContext())
    async with RegistryServiceClient(dev_servers.http_base_url, protocol=kind, codec=codec) as c:
        http = HttpListener(protocol, c)
        for method in ("Dispatch", "List", "Watch"):
            request = {
                "Dispatch": rpb.DispatchRequest(name="whoami", arguments_json="{}"),
                "List": rpb.ListRequest(),
                "Watch": rpb.WatchRequest(),
            }[method]
            outcome = await http.call(method, request, None)
            assert (outcome.code, outcome.reason) == ("UNAUTHENTICATED", "TOKEN_MISSING"), method
        # A run token works, as the local principal narrowed to dispatch.
        who = await http.call(
            "Dispatch", rpb.DispatchRequest(name="whoami", arguments_json="{}"), bearer(token)
        )
        assert json.loads(who.message.result.output)["scopes"] == ["dispatch"]


@pytest.mark.parametrize(
    ("config", "exposed"),
    [
        (ServerConfig(host="0.0.0.0", port=0, http_port=0), "0.0.0.0"),
        (ServerConfig(host="::", port=0, http_port=0), "::"),
        (ServerConfig(host="127.0.0.1", http_host="0.0.0.0", port=0, http_port=0), "0.0.0.0"),
        (ServerConfig(host="192.0.2.1", http_host="127.0.0.1", port=0, http_port=0), "192.0.2.1"),
    ],
)
def test_development_mode_refuses_any_address_but_loopback(
    config: ServerConfig, exposed: str
) -> None:
    registry = ToolRegistry()
    try:
        with pytest.raises(InsecureBindError) as caught:
            ToolwireServers(registry, config)
        message = str(caught.value)
        assert f"listen on {exposed} unauthenticated" in message
        assert "auth.tokens" in message and "TOOLWIRE_TOKENS" in message
        assert "127.0.0.1" in message
    finally:
        registry.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
async def test_development_mode_accepts_loopback_addresses(host: str) -> None:
    registry = ToolRegistry()
    try:
        assert ToolwireServers(registry, ServerConfig(host=host, port=0, http_port=0)).development
    finally:
        registry.close()


async def test_with_tokens_any_address_is_allowed() -> None:
    registry = ToolRegistry()
    try:
        authenticator = Authenticator(token_entries(parse_config(CONFIG), TOKENS))
        servers = ToolwireServers(
            registry, ServerConfig(host="0.0.0.0", port=0), authenticator=authenticator
        )
        assert not servers.development
    finally:
        registry.close()


# -- provider ownership through gRPC -------------------------------------------------


async def alpha(text: str) -> str:
    """Alice's tool.

    Args:
        text: Anything.
    """
    return f"alice:{text}"


async def beta(text: str) -> str:
    """Bob's tool.

    Args:
        text: Anything.
    """
    return f"bob:{text}"


async def grpc_outcome(stack: Stack, method: str, request: Any, principal: str) -> Outcome:
    return await GrpcListener(stack).call(
        method, request, bearer(TOKENS[f"{principal.upper()}_TOKEN"])
    )


def assert_not_owner(outcome: Outcome) -> None:
    assert (outcome.code, outcome.reason) == ("PERMISSION_DENIED", "NOT_OWNER"), outcome


async def test_only_the_registering_principal_may_change_its_tools(stack: Stack) -> None:
    async with (
        stack.client("alice").provide([alpha], name="alice-provider") as alice,
        stack.client("bob").provide([beta], name="bob-provider") as bob,
    ):
        # Bob cannot remove Alice's tool, replace it, or add tools to her provider.
        assert_not_owner(
            await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="alpha"), "bob")
        )
        takeover = rpb.RegisterRequest(
            provider_id=bob.provider_id, definition=definition("alpha", "bob's"), replace=True
        )
        assert_not_owner(await grpc_outcome(stack, "Register", takeover, "bob"))
        onto_hers = rpb.RegisterRequest(
            provider_id=alice.provider_id, definition=definition("gamma")
        )
        outcome = await grpc_outcome(stack, "Register", onto_hers, "bob")
        assert_not_owner(outcome)
        assert "belongs to principal 'alice'" in outcome.details
        assert stack.registry.get("gamma") is None
        # Alice's tool is untouched: still hers, still served by her provider.
        assert stack.registry.owner_of("alpha") == alice.provider_id
        result = await stack.client("agent").dispatch("alpha", {"text": "x"})
        assert result.output == "alice:x"

        # Alice may replace and unregister her own.
        mine = rpb.RegisterRequest(
            provider_id=alice.provider_id,
            definition=definition("alpha", "replaced by alice"),
            replace=True,
        )
        replaced = await grpc_outcome(stack, "Register", mine, "alice")
        assert replaced.code == "OK", replaced
        assert stack.registry.get("alpha").description == "replaced by alice"  # type: ignore[union-attr]
        gone = await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="alpha"), "alice")
        assert gone.code == "OK", gone
        assert stack.registry.get("alpha") is None

        # And Bob his: the rule is symmetric, not first-come.
        assert_not_owner(
            await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="beta"), "alice")
        )
        assert stack.registry.get("beta") is not None


async def test_an_admin_may_unregister_anyones_tool(stack: Stack) -> None:
    async with stack.client("alice").provide([alpha]) as alice:
        assert stack.registry.owner_of("alpha") == alice.provider_id
        gone = await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="alpha"), "admin")
        assert gone.code == "OK", gone
        assert stack.registry.get("alpha") is None


async def test_built_in_tools_are_unregistered_by_an_admin_only(stack: Stack) -> None:
    for principal in ("alice", "bob"):
        assert_not_owner(
            await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="echo"), principal)
        )
    async with stack.client("alice").provide([alpha]) as alice:
        over_builtin = rpb.RegisterRequest(
            provider_id=alice.provider_id, definition=definition("echo"), replace=True
        )
        assert_not_owner(await grpc_outcome(stack, "Register", over_builtin, "alice"))
    assert stack.registry.owner_of("echo") is None
    gone = await grpc_outcome(stack, "Unregister", rpb.UnregisterRequest(name="echo"), "admin")
    assert gone.code == "OK", gone
    assert stack.registry.get("echo") is None


async def test_a_provider_stream_needs_the_register_scope(stack: Stack) -> None:
    with pytest.raises(ToolwireRpcError) as caught:
        async with stack.client("agent").provide([alpha]):
            pass
    assert caught.value.code is grpc.StatusCode.PERMISSION_DENIED
    assert caught.value.reason == "SCOPE_MISSING"
    assert stack.registry.get("alpha") is None


# -- message size -------------------------------------------------------------------


async def test_an_oversize_request_is_refused_and_the_server_keeps_serving(
    stack: Stack, listener: Listener
) -> None:
    agent = bearer(TOKENS["AGENT_TOKEN"])
    big = rpb.DispatchRequest(
        name="echo", arguments_json=json.dumps({"text": "x" * (MAX_MESSAGE_BYTES + 1)})
    )
    outcome = await listener.call("Dispatch", big, agent)
    assert outcome.code == "RESOURCE_EXHAUSTED", outcome
    # Just below the limit still goes through, and so does everything after.
    fits = rpb.DispatchRequest(
        name="echo", arguments_json=json.dumps({"text": "x" * (MAX_MESSAGE_BYTES - 100)})
    )
    ok = await listener.call("Dispatch", fits, agent)
    assert ok.message.result.output == f"echo:{MAX_MESSAGE_BYTES - 100}"
    again = await listener.call("Dispatch", requests(stack)["Dispatch"], agent)
    assert again.message.result.output == "5"


# -- what Watch shows --------------------------------------------------------------


def _watch(listener: Listener, authorization: str) -> AsyncIterator[rpb.WatchResponse]:
    if isinstance(listener, GrpcListener):
        stream: Any = listener._stub.Watch(
            rpb.WatchRequest(), metadata=(("authorization", authorization),), timeout=WAIT
        )
        return aiter(stream)
    return listener._client.watch(  # type: ignore[no-any-return]
        rpb.WatchRequest(),
        headers={"authorization": authorization},
        timeout_ms=int(WAIT * 1000),
    )


async def test_watch_shows_a_caller_only_the_tools_its_policy_allows(
    stack: Stack, listener: Listener
) -> None:
    """Added and removed alike: the removal of a tool the caller may not see
    would give its name away as surely as its addition."""
    agent, admin = bearer(TOKENS["AGENT_TOKEN"]), bearer(TOKENS["ADMIN_TOKEN"])
    seen: list[tuple[int, str]] = []
    synced = asyncio.Event()
    last = (rpb.REGISTRY_EVENT_KIND_TOOL_REMOVED, "echo")

    async def watch() -> None:
        async for event in _watch(listener, agent):
            seen.append((event.kind, event.tool_name))
            synced.set()
            if seen[-1] == last:
                return

    watcher = asyncio.create_task(watch())
    try:
        await asyncio.wait_for(synced.wait(), WAIT)
        async with stack.client("alice").provide([alpha]):
            admin_calls = GrpcListener(stack)
            for name in ("secret_dump", "echo"):  # hidden from agent, then shown
                gone = await admin_calls.call("Unregister", rpb.UnregisterRequest(name=name), admin)
                assert gone.code == "OK", gone
            await asyncio.wait_for(asyncio.shield(watcher), WAIT)
    finally:
        watcher.cancel()
    assert seen[0][0] == rpb.REGISTRY_EVENT_KIND_SYNCED
    names = [name for _, name in seen]
    assert "alpha" in names and "echo" in names
    assert "secret_dump" not in names, seen
