"""The policy layer through gRPC on a real loopback socket, with bearer tokens:
tool policy (deny beats allow, groups, tiers, what List/ToModelTools/
GenerateStubs show), exec approvals with the real `exec` (a smuggled command
would really run: marker files prove none did), the approval flow end to end,
sandbox placement in results, and per-principal and per-tool limits.

The server is the real one (`ToolwireServers` with a `PolicyEngine`,
`ConcurrencyLimits` and an `Authenticator` built from the configuration's
tokens); the callers are the Python client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from toolwire.approvals import ApprovalBook
from toolwire.auth import Authenticator
from toolwire.builtin.exec import exec_tools
from toolwire.capabilities import Capabilities
from toolwire.limits import ConcurrencyLimits
from toolwire.models import (
    ApprovalState,
    ApprovalTicket,
    ErrorCode,
    Runtime,
    SafetyTier,
    SandboxPlacement,
    ToolDefinition,
    ToolResult,
)
from toolwire.policy.allowlist import AddedBy, ExecAllowlist
from toolwire.policy.config import parse_config, token_entries
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.server import ServerConfig, ToolwireServers
from toolwire.tools import Tool, ToolContext
from toolwire.workspace import Workspace
from toolwire_client import AsyncToolwireClient, ToolwireRpcError

WAIT = 10.0
"""Generous: what should happen at once fails the test, instead of hanging it."""
TTL = 60.0
MEMORY_MB = 512

TOKENS = {
    "AGENT_TOKEN": "agent-secret",
    "STRICT_TOKEN": "strict-secret",
    "READER_TOKEN": "reader-secret",
    "OPS_TOKEN": "ops-secret",
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
            {"principal": "strict", "scopes": ["dispatch"], "token_env": "STRICT_TOKEN"},
            {"principal": "reader", "scopes": ["dispatch"], "token_env": "READER_TOKEN"},
            {"principal": "ops", "scopes": ["dispatch"], "token_env": "OPS_TOKEN"},
            {"principal": "admin", "scopes": ["admin"], "token_env": "ADMIN_TOKEN"},
        ]
    },
    "policies": {
        "agents": {
            "allow": ["note_*", "exec", "reboot", "deploy", "fetch", "hold", "solo"],
            "allow_groups": ["math"],
            "deny": ["note_delete"],
            "deny_groups": ["vault"],
            "exec": {"mode": "allowlist", "on_miss": "approve", "allowlist": ["ls", "ls *"]},
        },
        "strict": {
            "allow": ["exec"],
            "exec": {"mode": "allowlist", "on_miss": "deny", "allowlist": ["ls", "ls *"]},
        },
        "reader": {"allow_tiers": ["read_only"], "deny_groups": ["vault"]},
        "ops": {"allow_groups": ["system", "notes", "hold"], "deny_tiers": ["privileged"]},
    },
    "sandbox": {"exec": {"memory_mb": MEMORY_MB}, "fetch": {"network": False}},
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Gate:
    """Holds calls of `hold` and `solo` until released; says when each started."""

    started: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def next_start(self) -> str:
        return await asyncio.wait_for(self.started.get(), WAIT)


@dataclass
class Server:
    target: str
    workspace: Path
    allowlist: ExecAllowlist
    clock: FakeClock
    gate: Gate
    runs: list[dict[str, Any]]
    """The arguments of every call of `reboot` and `deploy` that ran."""
    clients: dict[str, AsyncToolwireClient]

    def __getitem__(self, principal: str) -> AsyncToolwireClient:
        return self.clients[principal]


TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}
HOST_ARG = {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}
TAG = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}


def tools(gate: Gate, runs: list[dict[str, Any]]) -> list[Tool]:
    async def echo(arguments: Any, context: ToolContext) -> str:
        return f"{context.tool_name}:{arguments.get('text', '')}"

    async def record(arguments: Any, context: ToolContext) -> str:
        runs.append({"tool": context.tool_name, **arguments})
        return f"{context.tool_name} ran for {arguments['host']}"

    async def held(arguments: Any, context: ToolContext) -> str:
        gate.started.put_nowait(arguments["tag"])
        await asyncio.wait_for(gate.release.wait(), WAIT)
        return arguments["tag"]

    def plain(name: str, group: str, tier: SafetyTier, **extra: Any) -> Tool:
        return Tool.of(
            ToolDefinition(name=name, group=group, safety_tier=tier, input_schema=TEXT, **extra),
            echo,
        )

    ro, se, priv = SafetyTier.READ_ONLY, SafetyTier.SIDE_EFFECTING, SafetyTier.PRIVILEGED
    return [
        plain("note_read", "notes", ro),
        plain("note_write", "notes", se),
        plain("note_delete", "notes", se),
        plain("add", "math", ro),
        plain("secret_dump", "vault", ro),
        plain("fetch", "web", ro),
        Tool.of(
            ToolDefinition(name="reboot", group="system", safety_tier=priv, input_schema=HOST_ARG),
            record,
        ),
        Tool.of(
            ToolDefinition(name="deploy", requires_approval=True, input_schema=HOST_ARG), record
        ),
        Tool.of(ToolDefinition(name="hold", group="hold", input_schema=TAG), held),
        Tool.of(
            ToolDefinition(name="solo", group="hold", input_schema=TAG, max_concurrency=1), held
        ),
    ]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    config = parse_config(CONFIG)
    clock = FakeClock()
    approvals = ApprovalBook(ttl_seconds=TTL, clock=clock)
    allowlist = ExecAllowlist(tmp_path / "allow.sqlite", clock=clock)
    registry = ToolRegistry(
        policy=PolicyEngine(config, approvals=approvals, allowlist=allowlist),
        limits=ConcurrencyLimits(per_principal=2),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    gate, runs = Gate(), []
    for tool in [*tools(gate, runs), *exec_tools(Workspace(workspace))]:
        registry.register(tool)
    capabilities = Capabilities()
    servers = ToolwireServers(
        registry,
        ServerConfig(port=0, http_port=0, grace_seconds=0),
        capabilities=capabilities,
        authenticator=Authenticator(token_entries(config, TOKENS), capabilities=capabilities),
    )
    await servers.start()
    target = f"127.0.0.1:{servers.grpc.port}"
    clients = {
        env.removesuffix("_TOKEN").lower(): AsyncToolwireClient(
            target, token=token, timeout=WAIT * 3
        )
        for env, token in TOKENS.items()
    }
    try:
        yield Server(target, workspace, allowlist, clock, gate, runs, clients)
    finally:
        gate.release.set()
        for client in clients.values():
            await client.close()
        await servers.stop(0)
        approvals.close()
        allowlist.close()
        registry.close()


def assert_denied(result: ToolResult, rule: str) -> None:
    assert not result.success
    assert result.error_code is ErrorCode.DENIED_BY_POLICY, result
    assert result.policy_rule == rule
    assert result.error.startswith(f"denied by policy ({rule}): ")


async def rpc_error(call: Any) -> ToolwireRpcError:
    with pytest.raises(ToolwireRpcError) as caught:
        await call
    return caught.value


# -- layer 1 ---------------------------------------------------------------------


async def test_deny_by_name_beats_allow_by_name(server: Server) -> None:
    assert (await server["agent"].dispatch("note_read", {"text": "x"})).output == "note_read:x"
    result = await server["agent"].dispatch("note_delete", {"text": "x"})
    assert_denied(result, "policies.agents.deny[0]")
    assert "'note_delete' matches deny pattern 'note_delete'" in result.error


async def test_group_rules(server: Server) -> None:
    assert (await server["agent"].dispatch("add", {"text": "1"})).success  # allow_groups
    assert_denied(
        await server["agent"].dispatch("secret_dump", {}), "policies.agents.deny_groups[0]"
    )
    assert_denied(
        await server["reader"].dispatch("secret_dump", {}), "policies.reader.deny_groups[0]"
    )


async def test_tier_rules(server: Server) -> None:
    # reader: allow_tiers = read_only, so reads pass and the rest misses the allow lists.
    assert (await server["reader"].dispatch("note_read", {})).success
    assert_denied(await server["reader"].dispatch("note_write", {}), "policies.reader.allow")
    # ops: reboot is in an allowed group, but its tier is denied, and deny wins.
    assert (await server["ops"].dispatch("note_write", {})).success
    assert_denied(
        await server["ops"].dispatch("reboot", {"host": "db1"}), "policies.ops.deny_tiers[0]"
    )


async def test_a_denied_call_is_refused_before_its_arguments_are_looked_at(
    server: Server,
) -> None:
    result = await server["agent"].dispatch("note_delete", "{not json")
    assert_denied(result, "policies.agents.deny[0]")


async def test_list_shows_a_caller_only_what_its_policy_allows(server: Server) -> None:
    agent = {t.name for t in await server["agent"].list()}
    assert agent == {
        "add",
        "deploy",
        "exec",
        "fetch",
        "hold",
        "note_read",
        "note_write",
        "reboot",
        "solo",
    }
    reader = {t.name for t in await server["reader"].list()}
    assert reader == {"add", "fetch", "note_read"}
    ops = {t.name for t in await server["ops"].list()}
    assert ops == {"note_read", "note_write", "note_delete", "hold", "solo"}
    # The filters of List apply within what the policy shows.
    assert {t.name for t in await server["reader"].list(group="notes")} == {"note_read"}
    admin = {t.name for t in await server["admin"].list()}
    assert {"secret_dump", "note_delete", "exec"} <= admin


async def test_model_tools_and_stubs_show_only_allowed_tools(server: Server) -> None:
    converted = await server["reader"].to_model_tools("anthropic")
    assert {t["name"] for t in converted.tools} == {"add", "fetch", "note_read"}
    stubs = await server["reader"].generate_stubs()
    assert '"note_read"' in stubs and '"exec"' not in stubs and '"secret_dump"' not in stubs
    for call in (
        server["reader"].generate_stubs(["note_read", "secret_dump"]),
        server["reader"].to_model_tools("openai_chat", ["exec"]),
    ):
        error = await rpc_error(call)
        assert error.code is grpc.StatusCode.PERMISSION_DENIED
        assert error.reason == "DENIED_BY_POLICY"
    error = await rpc_error(server["agent"].generate_stubs(["secret_dump"]))
    assert (error.reason, error.metadata["name"]) == ("DENIED_BY_POLICY", "secret_dump")


# -- layer 2: exec approvals with the real exec -------------------------------------


SMUGGLED = [
    "ls; rm marker",
    "ls && rm marker",
    "ls || rm marker",
    "ls | rm marker",
    "ls & rm marker",
    "ls\nrm marker",
    "ls # comment\nrm marker",
    "ls $(rm marker)",
    'ls "$(rm marker)"',
    "ls `rm marker`",
    "ls > marker",
    "ls; touch pwned",
    "ls\ttouch pwned; ls",
]


@pytest.mark.parametrize("command", SMUGGLED)
async def test_metacharacters_cannot_smuggle_a_second_command(server: Server, command: str) -> None:
    marker = server.workspace / "marker"
    marker.write_text("keep me")
    strict = await server["strict"].dispatch("exec", {"command": command})
    assert_denied(strict, "policies.strict.exec.allowlist")
    asked = await server["agent"].dispatch("exec", {"command": command})
    assert asked.error_code is ErrorCode.APPROVAL_REQUIRED, asked
    assert asked.approval is not None and asked.approval.summary == f"exec: {command}"
    assert marker.read_text() == "keep me"
    assert not (server.workspace / "pwned").exists()
    # The same server does run commands: a plain allowed one, right after.
    ran = await server["strict"].dispatch("exec", {"command": "ls"})
    assert ran.success and ran.structured_output["stdout"].split() == ["marker"]


async def test_a_matching_command_runs(server: Server) -> None:
    (server.workspace / "a.txt").write_text("")
    result = await server["strict"].dispatch("exec", {"command": "ls -1 a.txt"})
    assert result.success, result
    assert result.structured_output["stdout"] == "a.txt\n"
    assert result.structured_output["exit_code"] == 0


async def test_exec_in_deny_mode_or_unlisted_runs_nothing(server: Server) -> None:
    result = await server["strict"].dispatch("exec", {"command": "touch pwned"})
    assert_denied(result, "policies.strict.exec.allowlist")
    assert "'touch pwned' matches no allowlist pattern" in result.error
    assert not (server.workspace / "pwned").exists()


async def test_stored_patterns_run_and_record_their_last_use(server: Server) -> None:
    entry = server.allowlist.add("touch made-*", AddedBy.USER)
    assert entry.last_used_at is None
    server.clock.now += 5
    result = await server["strict"].dispatch("exec", {"command": "touch made-by-pattern"})
    assert result.success, result
    assert (server.workspace / "made-by-pattern").exists()
    (stored,) = server.allowlist.entries()
    assert stored.last_used_at == server.clock.now
    # Configuration patterns are matched too, but only stored ones have a record.
    assert (await server["strict"].dispatch("exec", {"command": "ls"})).success
    assert [e.pattern for e in server.allowlist.entries()] == ["touch made-*"]


# -- layer 3 ---------------------------------------------------------------------


async def test_placement_is_reported_in_results(server: Server) -> None:
    plain = await server["agent"].dispatch("note_read", {})
    assert plain.sandbox == SandboxPlacement(runtime=Runtime.HOST, network=True)
    capped = await server["strict"].dispatch("exec", {"command": "ls"})
    assert capped.success, capped
    assert capped.sandbox == SandboxPlacement(
        runtime=Runtime.HOST, network=True, memory_limit_bytes=MEMORY_MB * 1024 * 1024
    )


async def test_a_constraint_the_tool_cannot_enforce_denies_the_call(server: Server) -> None:
    result = await server["agent"].dispatch("fetch", {})
    assert_denied(result, "sandbox.fetch.network")
    assert "cannot deny it network access" in result.error


# -- approvals end to end ------------------------------------------------------------


@contextlib.asynccontextmanager
async def watching(client: AsyncToolwireClient) -> AsyncIterator[asyncio.Queue[ApprovalTicket]]:
    seen: asyncio.Queue[ApprovalTicket] = asyncio.Queue()

    async def pump() -> None:
        async with contextlib.aclosing(client.watch_approvals()) as tickets:
            async for ticket in tickets:
                seen.put_nowait(ticket)

    task = asyncio.create_task(pump())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ToolwireRpcError):
            await task


async def next_ticket(seen: asyncio.Queue[ApprovalTicket]) -> ApprovalTicket:
    return await asyncio.wait_for(seen.get(), WAIT)


async def test_approval_flow_end_to_end(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    # A pending ticket from before the watch starts is in its snapshot.
    early = await agent.dispatch("deploy", {"host": "web1"})
    assert early.error_code is ErrorCode.APPROVAL_REQUIRED and early.approval is not None
    assert early.approval.reason == "tool 'deploy' is marked requires_approval"
    async with watching(admin) as seen:
        assert (await next_ticket(seen)).ticket_id == early.approval.ticket_id

        asked = await agent.dispatch("reboot", {"host": "db1"})
        assert not asked.success and asked.error_code is ErrorCode.APPROVAL_REQUIRED
        ticket = asked.approval
        assert ticket is not None and ticket.state is ApprovalState.PENDING
        assert ticket.summary == 'reboot({"host": "db1"})'
        assert ticket.requested_by == "agent" and ticket.tool_name == "reboot"
        assert ticket.expires_at == server.clock.now + TTL
        assert ticket.ticket_id in asked.error and server.runs == []

        watched = await next_ticket(seen)
        assert (watched.ticket_id, watched.state) == (ticket.ticket_id, ApprovalState.PENDING)
        assert watched.summary == ticket.summary

        # Retrying before a decision finds the same ticket, and runs nothing.
        retry = await agent.dispatch("reboot", {"host": "db1"})
        assert retry.approval is not None and retry.approval.ticket_id == ticket.ticket_id
        pending = await agent.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket.ticket_id)
        assert_denied(pending, "approval ticket")
        assert "still pending" in pending.error

        # Only an admin may decide.
        refused = await rpc_error(agent.approve(ticket.ticket_id))
        assert refused.code is grpc.StatusCode.PERMISSION_DENIED
        assert refused.reason == "SCOPE_MISSING"
        assert refused.metadata == {"principal": "agent", "scope": "admin"}

        approved = await admin.approve(ticket.ticket_id, "looks fine")
        assert approved.state is ApprovalState.APPROVED and approved.decided_by == "admin"
        watched = await next_ticket(seen)
        assert (watched.ticket_id, watched.state) == (ticket.ticket_id, ApprovalState.APPROVED)

        # The ticket covers exactly its call: other arguments, another caller.
        other = await agent.dispatch("reboot", {"host": "db2"}, approval_ticket=ticket.ticket_id)
        assert_denied(other, "approval ticket")
        assert "other arguments" in other.error
        stolen = await admin.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket.ticket_id)
        assert_denied(stolen, "approval ticket")
        assert "belongs to another principal" in stolen.error
        assert server.runs == []

        # It runs once...
        ran = await agent.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket.ticket_id)
        assert ran.success and ran.output == "reboot ran for db1"
        assert server.runs == [{"tool": "reboot", "host": "db1"}]
        watched = await next_ticket(seen)
        assert (watched.ticket_id, watched.state) == (ticket.ticket_id, ApprovalState.USED)

        # ...and never again.
        replay = await agent.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket.ticket_id)
        assert_denied(replay, "approval ticket")
        assert "already been used" in replay.error
        assert len(server.runs) == 1
        again = await rpc_error(admin.approve(ticket.ticket_id))
        assert (again.code, again.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "TICKET_NOT_PENDING",
        )


async def test_a_denied_ticket_runs_nothing(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    asked = await agent.dispatch("reboot", {"host": "db9"})
    assert asked.approval is not None
    ticket_id = asked.approval.ticket_id
    denied = await admin.deny(ticket_id, "not during business hours")
    assert denied.state is ApprovalState.DENIED
    result = await agent.dispatch("reboot", {"host": "db9"}, approval_ticket=ticket_id)
    assert_denied(result, "approval ticket")
    assert "was denied by 'admin': not during business hours" in result.error
    assert server.runs == []
    refused = await rpc_error(agent.deny(ticket_id))
    assert (refused.code, refused.reason) == (grpc.StatusCode.PERMISSION_DENIED, "SCOPE_MISSING")
    unknown = await rpc_error(admin.approve("apv_nope"))
    assert (unknown.code, unknown.reason) == (grpc.StatusCode.NOT_FOUND, "TICKET_NOT_FOUND")


async def test_tickets_expire(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    first = await agent.dispatch("reboot", {"host": "a"})
    second = await agent.dispatch("reboot", {"host": "b"})
    assert first.approval is not None and second.approval is not None
    await admin.approve(first.approval.ticket_id)
    server.clock.now += TTL + 1
    late = await agent.dispatch("reboot", {"host": "a"}, approval_ticket=first.approval.ticket_id)
    assert_denied(late, "approval ticket")
    assert "has expired" in late.error
    expired = await rpc_error(admin.approve(second.approval.ticket_id))
    assert expired.reason == "TICKET_NOT_PENDING" and expired.metadata["state"] == "expired"
    assert server.runs == []


async def test_remember_allowlists_the_approved_command(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    made = server.workspace / "made-by-approval"
    asked = await agent.dispatch("exec", {"command": "touch made-by-approval"})
    assert asked.error_code is ErrorCode.APPROVAL_REQUIRED and asked.approval is not None
    assert asked.approval.summary == "exec: touch made-by-approval"
    assert "matches no allowlist pattern" in asked.approval.reason
    assert not made.exists()
    await admin.approve(asked.approval.ticket_id, remember=True)
    assert [(e.pattern, e.added_by) for e in server.allowlist.entries()] == [
        ("touch made-by-approval", AddedBy.AUTO)
    ]
    ran = await agent.dispatch("exec", {"command": "touch made-by-approval"})
    assert ran.success, ran
    assert made.exists()
    # Only that command: a neighbour still needs approval.
    other = await agent.dispatch("exec", {"command": "touch made-by-approval2"})
    assert other.error_code is ErrorCode.APPROVAL_REQUIRED
    assert not (server.workspace / "made-by-approval2").exists()


async def test_an_approved_exec_ticket_runs_the_command_once(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    command = {"command": "touch once && ls once"}
    asked = await agent.dispatch("exec", command)
    assert asked.approval is not None
    await admin.approve(asked.approval.ticket_id)
    assert server.allowlist.entries() == []
    ran = await agent.dispatch("exec", command, approval_ticket=asked.approval.ticket_id)
    assert ran.success and ran.structured_output["stdout"] == "once\n"
    (server.workspace / "once").unlink()
    replay = await agent.dispatch("exec", command, approval_ticket=asked.approval.ticket_id)
    assert_denied(replay, "approval ticket")
    assert not (server.workspace / "once").exists()


# -- limits ----------------------------------------------------------------------


async def test_a_principal_over_its_limit_is_refused_promptly(server: Server) -> None:
    agent = server["agent"]
    first = asyncio.create_task(agent.dispatch("hold", {"tag": "a1"}))
    second = asyncio.create_task(agent.dispatch("hold", {"tag": "a2"}))
    assert {await server.gate.next_start(), await server.gate.next_start()} == {"a1", "a2"}

    third = await asyncio.wait_for(agent.dispatch("hold", {"tag": "a3"}), WAIT)
    assert third.error_code is ErrorCode.RESOURCE_EXHAUSTED, third
    assert "principal 'agent' already has 2 calls in flight" in third.error
    assert server.gate.started.empty()

    # Another principal is not affected by the agent's limit.
    other = asyncio.create_task(server["ops"].dispatch("hold", {"tag": "o1"}))
    assert await server.gate.next_start() == "o1"

    server.gate.release.set()
    results = await asyncio.wait_for(asyncio.gather(first, second, other), WAIT)
    assert [r.output for r in results] == ["a1", "a2", "o1"]
    again = await asyncio.wait_for(agent.dispatch("hold", {"tag": "a4"}), WAIT)
    assert again.success and again.output == "a4"


async def test_a_tool_over_its_limit_is_refused_for_everyone(server: Server) -> None:
    first = asyncio.create_task(server["agent"].dispatch("solo", {"tag": "s1"}))
    assert await server.gate.next_start() == "s1"
    for caller in ("agent", "ops"):
        refused = await asyncio.wait_for(server[caller].dispatch("solo", {"tag": "s2"}), WAIT)
        assert refused.error_code is ErrorCode.RESOURCE_EXHAUSTED, refused
        assert "tool 'solo' already runs 1 call at once" in refused.error
    # Other tools of the same callers still run.
    assert (await server["ops"].dispatch("note_read", {})).success
    server.gate.release.set()
    assert (await asyncio.wait_for(first, WAIT)).output == "s1"
    assert (await server["ops"].dispatch("solo", {"tag": "s3"})).output == "s3"


async def test_a_call_refused_by_a_limit_does_not_spend_its_approval(server: Server) -> None:
    agent, admin = server["agent"], server["admin"]
    asked = await agent.dispatch("reboot", {"host": "db1"})
    assert asked.approval is not None
    ticket_id = asked.approval.ticket_id
    await admin.approve(ticket_id)
    held = [asyncio.create_task(agent.dispatch("hold", {"tag": t})) for t in ("h1", "h2")]
    assert {await server.gate.next_start(), await server.gate.next_start()} == {"h1", "h2"}
    busy = await agent.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket_id)
    assert busy.error_code is ErrorCode.RESOURCE_EXHAUSTED, busy
    assert server.runs == []
    server.gate.release.set()
    await asyncio.wait_for(asyncio.gather(*held), WAIT)
    ran = await agent.dispatch("reboot", {"host": "db1"}, approval_ticket=ticket_id)
    assert ran.success, ran
    assert server.runs == [{"tool": "reboot", "host": "db1"}]


# -- authentication on the way in ---------------------------------------------------


async def test_tokens_decide_who_is_calling(server: Server) -> None:
    async with AsyncToolwireClient(server.target, token="wrong", timeout=WAIT) as stranger:
        error = await rpc_error(stranger.dispatch("note_read", {}))
    assert (error.code, error.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_INVALID")
    async with AsyncToolwireClient(server.target, timeout=WAIT) as anonymous:
        error = await rpc_error(anonymous.list())
    assert (error.code, error.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING")
