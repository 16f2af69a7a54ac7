"""The requests the policy and approval methods build and the answers they read,
for the blocking and the asyncio client alike.

A canned server (a generic handler for `toolwire.v1.RegistryService` on a real
`grpc.aio.server()`, loopback, port 0) records each request and answers what
the test gave it, or fails the call with a toolwire `ErrorInfo` the way the
real server does. It is not the real server: its end-to-end tests live with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2
from toolwire import convert
from toolwire.cli import main
from toolwire.models import ApprovalState, ErrorCode, Runtime
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb
from toolwire_client import (
    AsyncToolwireClient,
    BatchCall,
    BatchOutcome,
    CallContext,
    SafetyTier,
    ToolDefinition,
    ToolResult,
    ToolwireClient,
    ToolwireRpcError,
)

SERVICE = "toolwire.v1.RegistryService"
WAIT = 5.0

UNARY: dict[str, tuple[Any, Any]] = {
    "Register": (rpb.RegisterRequest, rpb.RegisterResponse),
    "Dispatch": (rpb.DispatchRequest, rpb.DispatchResponse),
    "DispatchBatch": (rpb.DispatchBatchRequest, rpb.DispatchBatchResponse),
    "Approve": (rpb.ApproveRequest, rpb.ApproveResponse),
    "Deny": (rpb.DenyRequest, rpb.DenyResponse),
}

ECHO = ToolDefinition(
    name="echo",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    safety_tier=SafetyTier.READ_ONLY,
)


def stamp(unix: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=unix)


TICKET = pb.ApprovalTicket(
    ticket_id="t-42",
    tool_name="exec",
    arguments_json='{"command":"rm -rf build"}',
    summary="rm -rf build",
    requested_by="agent-7",
    reason="exec: command not on the allowlist",
    state=pb.APPROVAL_STATE_PENDING,
    created_at=stamp(1_700_000_000),
    expires_at=stamp(1_700_000_600),
    context=pb.CallContext(caller_id="agent-7", session_id="s-1"),
)


@dataclass(frozen=True)
class Failure:
    code: grpc.StatusCode
    details: str
    reason: str
    metadata: dict[str, str] = field(default_factory=dict)

    def trailers(self) -> tuple[tuple[str, bytes], ...]:
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.ErrorInfo(
                reason=self.reason, domain="toolwire", metadata=self.metadata
            )
        )
        status = status_pb2.Status(code=self.code.value[0], message=self.details, details=[detail])
        return (("grpc-status-details-bin", status.SerializeToString()),)


class Canned:
    """Answers each method with what the test set; records every request."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.requests: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.authorizations: list[str] = []

    async def next_request(self, method: str) -> Any:
        seen, request = await asyncio.wait_for(self.requests.get(), WAIT)
        assert seen == method
        return request

    async def _answer(self, method: str, context: Any) -> Any:
        self.authorizations += [v for k, v in context.invocation_metadata() if k == "authorization"]
        answer = self.answers[method]
        if isinstance(answer, Failure):
            await context.abort(answer.code, answer.details, trailing_metadata=answer.trailers())
        return answer

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(method: str) -> grpc.RpcMethodHandler:
            request_type, response_type = UNARY[method]

            async def handle(request: Any, context: Any) -> Any:
                self.requests.put_nowait((method, request))
                return await self._answer(method, context)

            return grpc.unary_unary_rpc_method_handler(
                handle,
                request_deserializer=request_type.FromString,
                response_serializer=response_type.SerializeToString,
            )

        async def watch_approvals(
            request: rpb.WatchApprovalsRequest, context: Any
        ) -> AsyncIterator[rpb.WatchApprovalsResponse]:
            self.requests.put_nowait(("WatchApprovals", request))
            for ticket in await self._answer("WatchApprovals", context):
                yield rpb.WatchApprovalsResponse(ticket=ticket)

        handlers = {method: unary(method) for method in UNARY}
        handlers["WatchApprovals"] = grpc.unary_stream_rpc_method_handler(
            watch_approvals,
            request_deserializer=rpb.WatchApprovalsRequest.FromString,
            response_serializer=rpb.WatchApprovalsResponse.SerializeToString,
        )
        return grpc.method_handlers_generic_handler(SERVICE, handlers)


@pytest.fixture
async def canned() -> AsyncIterator[tuple[Canned, str]]:
    server_side = Canned()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((server_side.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield server_side, f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


class Client:
    """Either client behind one awaitable interface, so each test covers both."""

    def __init__(self, sync: ToolwireClient | None, aio: AsyncToolwireClient | None) -> None:
        self._sync = sync
        self._aio = aio

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._aio is not None:
            return await getattr(self._aio, method)(*args, **kwargs)
        return await asyncio.to_thread(getattr(self._sync, method), *args, **kwargs)

    async def first_tickets(self, count: int) -> list[Any]:
        if self._aio is not None:
            async with contextlib.aclosing(self._aio.watch_approvals()) as tickets:
                return [await anext(tickets) for _ in range(count)]
        assert self._sync is not None
        sync = self._sync
        return await asyncio.to_thread(
            lambda: list(itertools.islice(sync.watch_approvals(), count))
        )


@pytest.fixture(params=["sync", "async"])
async def client(
    request: pytest.FixtureRequest, canned: tuple[Canned, str]
) -> AsyncIterator[Client]:
    _, target = canned
    if request.param == "sync":
        with ToolwireClient(target, token="", timeout=10) as sync:
            yield Client(sync, None)
    else:
        async with AsyncToolwireClient(target, token="", timeout=10) as aio:
            yield Client(None, aio)


@pytest.fixture
def server(canned: tuple[Canned, str]) -> Canned:
    return canned[0]


async def test_dispatch_sends_the_ticket_and_reads_approval_sandbox_and_rule(
    server: Canned, client: Client
) -> None:
    server.answers["Dispatch"] = rpb.DispatchResponse(
        result=pb.ToolResult(
            success=False,
            error="exec needs approval",
            error_code=pb.ERROR_CODE_APPROVAL_REQUIRED,
            approval=TICKET,
            sandbox=pb.SandboxPlacement(
                runtime=pb.RUNTIME_DENO, network=False, memory_limit_bytes=64 << 20
            ),
            policy_rule="policies.agents.approve[0]",
        )
    )

    result: ToolResult = await client(
        "dispatch", "exec", {"command": "rm -rf build"}, approval_ticket="t-41"
    )

    request = await server.next_request("Dispatch")
    assert (request.name, request.approval_ticket) == ("exec", "t-41")
    assert json.loads(request.arguments_json) == {"command": "rm -rf build"}
    assert result.error_code == ErrorCode.APPROVAL_REQUIRED
    assert result.policy_rule == "policies.agents.approve[0]"
    assert result.sandbox is not None
    assert (result.sandbox.runtime, result.sandbox.network) == (Runtime.DENO, False)
    assert result.sandbox.memory_limit_bytes == 64 << 20
    assert result.approval is not None
    assert result.approval == convert.ticket_from_proto(TICKET)
    assert (result.approval.ticket_id, result.approval.state) == ("t-42", ApprovalState.PENDING)
    assert result.approval.expires_at - result.approval.created_at == 600


async def test_dispatch_sends_no_ticket_by_default(server: Canned, client: Client) -> None:
    server.answers["Dispatch"] = rpb.DispatchResponse(result=pb.ToolResult(success=True))

    await client("dispatch", "echo", {"text": "hi"})

    assert (await server.next_request("Dispatch")).approval_ticket == ""


async def test_dispatch_batch_builds_calls_from_each_form_and_reads_outcomes_in_order(
    server: Canned, client: Client
) -> None:
    server.answers["DispatchBatch"] = rpb.DispatchBatchResponse(
        results=[
            rpb.BatchResult(call_id="toolu_1", result=pb.ToolResult(success=True, output="a")),
            rpb.BatchResult(
                call_id="call-1",
                result=pb.ToolResult(
                    success=False,
                    error="denied",
                    error_code=pb.ERROR_CODE_DENIED_BY_POLICY,
                    policy_rule="policies.agents.deny[0]",
                ),
            ),
            rpb.BatchResult(call_id="c-3", result=pb.ToolResult(success=True, output="c")),
        ]
    )

    outcomes = await client(
        "dispatch_batch",
        [
            BatchCall("echo", {"text": "a"}, call_id="toolu_1"),
            ("exec", '{"command": "ls"}'),
            {"name": "echo", "call_id": "c-3", "approval_ticket": "t-9"},
        ],
        context=CallContext(caller_id="agent-1", session_id="s-2"),
    )

    request = await server.next_request("DispatchBatch")
    assert [(c.call_id, c.name, c.arguments_json, c.approval_ticket) for c in request.calls] == [
        ("toolu_1", "echo", '{"text":"a"}', ""),
        ("call-1", "exec", '{"command": "ls"}', ""),
        ("c-3", "echo", "", "t-9"),
    ]
    assert request.context == pb.CallContext(caller_id="agent-1", session_id="s-2")
    assert outcomes == [
        BatchOutcome("toolu_1", ToolResult.ok("a")),
        BatchOutcome(
            "call-1",
            ToolResult.fail(ErrorCode.DENIED_BY_POLICY, "denied").model_copy(
                update={"policy_rule": "policies.agents.deny[0]"}
            ),
        ),
        BatchOutcome("c-3", ToolResult.ok("c")),
    ]


async def test_a_batch_call_mapping_with_an_unknown_field_is_refused_before_sending(
    client: Client,
) -> None:
    with pytest.raises(ValueError, match="batch call 1"):
        await client("dispatch_batch", [("echo", None), {"name": "echo", "input": {}}])


async def test_approve_sends_reason_and_remember_and_reads_the_decided_ticket(
    server: Canned, client: Client
) -> None:
    decided = pb.ApprovalTicket()
    decided.CopyFrom(TICKET)
    decided.state = pb.APPROVAL_STATE_APPROVED
    decided.decided_by = "ops"
    decided.decision_reason = "cleaning up is fine"
    server.answers["Approve"] = rpb.ApproveResponse(ticket=decided)

    ticket = await client("approve", "t-42", "cleaning up is fine", remember=True)

    request = await server.next_request("Approve")
    assert request == rpb.ApproveRequest(
        ticket_id="t-42", reason="cleaning up is fine", remember=True
    )
    assert (ticket.ticket_id, ticket.state, ticket.decided_by) == (
        "t-42",
        ApprovalState.APPROVED,
        "ops",
    )
    assert ticket.context == CallContext(caller_id="agent-7", session_id="s-1")


async def test_deny_sends_the_reason_and_reads_the_ticket(server: Canned, client: Client) -> None:
    denied = pb.ApprovalTicket(ticket_id="t-42", state=pb.APPROVAL_STATE_DENIED)
    server.answers["Deny"] = rpb.DenyResponse(ticket=denied)

    ticket = await client("deny", "t-42", reason="not today")

    assert await server.next_request("Deny") == rpb.DenyRequest(
        ticket_id="t-42", reason="not today"
    )
    assert ticket.state == ApprovalState.DENIED


async def test_register_sends_replace(server: Canned, client: Client) -> None:
    server.answers["Register"] = rpb.RegisterResponse(definition=convert.definition_to_proto(ECHO))

    await client("register", ECHO, "prov-1")
    stored = await client("register", ECHO, "prov-1", replace=True)

    first = await server.next_request("Register")
    second = await server.next_request("Register")
    assert (first.replace, second.replace) == (False, True)
    assert second.provider_id == "prov-1"
    assert stored.name == "echo"


async def test_watch_approvals_yields_tickets_as_they_come(server: Canned, client: Client) -> None:
    used = pb.ApprovalTicket(ticket_id="t-1", state=pb.APPROVAL_STATE_USED)
    server.answers["WatchApprovals"] = [TICKET, used]

    tickets = await client.first_tickets(2)

    assert [(t.ticket_id, t.state) for t in tickets] == [
        ("t-42", ApprovalState.PENDING),
        ("t-1", ApprovalState.USED),
    ]


@pytest.mark.parametrize(
    ("rpc_method", "method", "arguments", "failure"),
    [
        (
            "Approve",
            "approve",
            ("t-42",),
            Failure(
                grpc.StatusCode.PERMISSION_DENIED,
                "approving needs scope admin",
                "SCOPE_MISSING",
                {"scope": "admin"},
            ),
        ),
        (
            "Deny",
            "deny",
            ("t-42",),
            Failure(grpc.StatusCode.NOT_FOUND, "no ticket", "TICKET_NOT_FOUND"),
        ),
        (
            "DispatchBatch",
            "dispatch_batch",
            ([("echo", None)],),
            Failure(grpc.StatusCode.UNAUTHENTICATED, "no token", "TOKEN_MISSING"),
        ),
        (
            "Dispatch",
            "dispatch",
            ("echo",),
            Failure(grpc.StatusCode.UNAUTHENTICATED, "bad token", "TOKEN_INVALID"),
        ),
    ],
)
async def test_failed_calls_raise_rpc_errors_with_reason_and_metadata(
    server: Canned,
    client: Client,
    rpc_method: str,
    method: str,
    arguments: tuple[Any, ...],
    failure: Failure,
) -> None:
    server.answers[rpc_method] = failure

    with pytest.raises(ToolwireRpcError) as caught:
        await client(method, *arguments)

    error = caught.value
    assert (error.code, error.reason, error.details) == (
        failure.code,
        failure.reason,
        failure.details,
    )
    assert error.metadata == failure.metadata


async def test_a_refused_approvals_watch_raises_an_rpc_error(
    server: Canned, client: Client
) -> None:
    server.answers["WatchApprovals"] = Failure(
        grpc.StatusCode.PERMISSION_DENIED, "needs admin", "SCOPE_MISSING", {"scope": "admin"}
    )

    with pytest.raises(ToolwireRpcError) as caught:
        await client.first_tickets(1)

    assert (caught.value.code, caught.value.reason) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "SCOPE_MISSING",
    )
    assert caught.value.metadata == {"scope": "admin"}


async def test_cli_call_that_needs_approval_says_how_to_approve_and_retry(
    canned: tuple[Canned, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server, target = canned
    server.answers["Dispatch"] = rpb.DispatchResponse(
        result=pb.ToolResult(
            success=False,
            error="exec needs approval",
            error_code=pb.ERROR_CODE_APPROVAL_REQUIRED,
            approval=TICKET,
        )
    )
    call = ["call", "exec", "--target", target, "--token", "cli-token"]

    first = await asyncio.to_thread(main, [*call, "--args", '{"command": "rm -rf build"}'])
    second = await asyncio.to_thread(main, [*call, "--ticket", "t-42"])

    assert (first, second) == (1, 1)
    assert (await server.next_request("Dispatch")).approval_ticket == ""
    assert (await server.next_request("Dispatch")).approval_ticket == "t-42"
    assert server.authorizations == ["Bearer cli-token", "Bearer cli-token"]
    said = capsys.readouterr().err
    assert "approval required: ticket t-42" in said
    assert "rm -rf build" in said
    assert "toolwire approvals approve t-42" in said
    assert "--ticket t-42" in said


async def test_cli_approvals_approve_deny_and_watch(
    canned: tuple[Canned, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, target = canned
    monkeypatch.setenv("TOOLWIRE_TOKEN", "env-token")
    approved = pb.ApprovalTicket(
        ticket_id="t-42", state=pb.APPROVAL_STATE_APPROVED, decided_by="ops", summary="ls"
    )
    server.answers["Approve"] = rpb.ApproveResponse(ticket=approved)
    server.answers["Deny"] = rpb.DenyResponse(
        ticket=pb.ApprovalTicket(ticket_id="t-43", state=pb.APPROVAL_STATE_DENIED)
    )
    server.answers["WatchApprovals"] = [TICKET]
    connection = ["--target", target]

    codes = [
        await asyncio.to_thread(main, ["approvals", "approve", "t-42", "--remember", *connection]),
        await asyncio.to_thread(main, ["approvals", "deny", "t-43", "--reason", "no", *connection]),
        await asyncio.to_thread(main, ["approvals", "watch", "--json", *connection]),
    ]

    assert codes == [0, 0, 0]
    assert await server.next_request("Approve") == rpb.ApproveRequest(
        ticket_id="t-42", remember=True
    )
    assert await server.next_request("Deny") == rpb.DenyRequest(ticket_id="t-43", reason="no")
    assert server.authorizations == ["Bearer env-token"] * 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("t-42  approved")
    assert any(line.startswith("t-43  denied") for line in lines)
    assert json.loads(lines[-1])["ticket_id"] == "t-42"


async def test_cli_reports_a_missing_token(
    canned: tuple[Canned, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, target = canned
    monkeypatch.delenv("TOOLWIRE_TOKEN", raising=False)
    server.answers["Deny"] = Failure(
        grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required", "TOKEN_MISSING"
    )

    code = await asyncio.to_thread(main, ["approvals", "deny", "t-1", "--target", target])

    assert code == 2
    said = capsys.readouterr().err
    assert "UNAUTHENTICATED (TOKEN_MISSING)" in said
    assert "TOOLWIRE_TOKEN" in said
