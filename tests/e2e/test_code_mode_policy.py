"""A code run's token is a principal of the one auth system: the run acts for
whoever dispatched `execute_code`, under that principal's policy.

An in-process server with a policy (the agent's denies `secret_*`), two tokens
from the configuration, the real Deno sandbox and both listeners; the Python
client dispatches `execute_code` over gRPC, and the code calls tools back over
the HTTP listener with its run token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from toolwire.approvals import ApprovalBook
from toolwire.audit import SqliteAuditLog, read_entries
from toolwire.auth import Authenticator
from toolwire.builtin.code import code_tools
from toolwire.capabilities import Capabilities
from toolwire.codemode import CodeMode
from toolwire.declare import tool
from toolwire.models import ApprovalState, ErrorCode, SafetyTier, ToolResult
from toolwire.policy.config import parse_config, token_entries
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.sandbox import DenoRuntime, Limits, RunOutcome, SandboxUnavailableError
from toolwire.server import ServerConfig, ToolwireServers
from toolwire_client import AsyncToolwireClient

AGENT_TOKEN = "agent-token-0123456789abcdef"
OPS_TOKEN = "ops-token-0123456789abcdef"
WAIT = 120.0

CONFIG = parse_config(
    {
        "auth": {
            "tokens": [
                {
                    "principal": "agent",
                    "scopes": ["dispatch"],
                    "token_env": "AGENT_TOKEN",
                    "policy": "agents",
                },
                {"principal": "ops", "scopes": ["admin"], "token_env": "OPS_TOKEN"},
            ]
        },
        "policies": {"agents": {"deny": ["secret_*"]}},
    }
)


@tool(safety_tier=SafetyTier.READ_ONLY)
async def secret_lookup(key: str) -> str:
    """Look up a secret by its key."""
    return f"the secret of {key}"


@tool(safety_tier=SafetyTier.READ_ONLY)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(safety_tier=SafetyTier.PRIVILEGED)
async def rotate_keys(service: str) -> str:
    """Rotate a service's keys."""
    return f"rotated {service}"


class RecordingSandbox:
    """The real sandbox, remembering the stubs each run was given."""

    def __init__(self, runtime: DenoRuntime) -> None:
        self.runtime = runtime
        self.stubs: list[str] = []

    async def run(
        self, code: str, *, stubs: str, base_url: str, token: str, check: bool = True
    ) -> RunOutcome:
        self.stubs.append(stubs)
        return await self.runtime.run(
            code, stubs=stubs, base_url=base_url, token=token, check=check
        )


@dataclass
class World:
    servers: ToolwireServers
    approvals: ApprovalBook
    audit: SqliteAuditLog
    sandbox: RecordingSandbox
    clients: dict[str, AsyncToolwireClient] = field(default_factory=dict)

    def client(self, who: str) -> AsyncToolwireClient:
        return self.clients[who]

    async def run(self, who: str, code: str, *, check: bool = True) -> ToolResult:
        return await self.client(who).dispatch(
            "execute_code", {"code": code, "check": check}, timeout=WAIT
        )


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DenoRuntime]:
    try:
        runtime = DenoRuntime(
            limits=Limits(timeout_seconds=30), work_root=tmp_path_factory.mktemp("sandbox")
        )
    except SandboxUnavailableError as error:  # Deno is a dependency: its absence is a defect
        pytest.fail(str(error))
    yield runtime
    asyncio.run(runtime.aclose())


@pytest.fixture
async def world(runtime: DenoRuntime, tmp_path: Path) -> AsyncIterator[World]:
    approvals = ApprovalBook(ttl_seconds=CONFIG.approvals.ttl_seconds)
    audit = SqliteAuditLog(tmp_path / "audit.sqlite")
    registry = ToolRegistry(policy=PolicyEngine(CONFIG, approvals=approvals), audit=audit)
    capabilities = Capabilities()
    tokens = token_entries(CONFIG, {"AGENT_TOKEN": AGENT_TOKEN, "OPS_TOKEN": OPS_TOKEN})
    servers = ToolwireServers(
        registry,
        ServerConfig(port=0, http_port=0, grace_seconds=0),
        capabilities=capabilities,
        authenticator=Authenticator(tokens, capabilities=capabilities),
    )
    sandbox = RecordingSandbox(runtime)
    mode = CodeMode(registry, capabilities, sandbox, lambda: servers.http_base_url)
    for t in [*code_tools(mode), secret_lookup.tool, add.tool, rotate_keys.tool]:
        registry.register(t)
    await servers.start()
    target = f"127.0.0.1:{servers.grpc.port}"
    world = World(servers, approvals, audit, sandbox)
    world.clients = {
        "agent": AsyncToolwireClient(target, token=AGENT_TOKEN),
        "ops": AsyncToolwireClient(target, token=OPS_TOKEN),
    }
    try:
        yield world
    finally:
        for client in world.clients.values():
            await client.close()
        await servers.stop(0)
        registry.close()
        audit.close()
        approvals.close()


def report(result: ToolResult) -> dict[str, Any]:
    """The run's report: structured on success, the output's JSON on failure."""
    if result.structured_output is not None:
        return dict(result.structured_output)
    return dict(json.loads(result.output))


def nested(result: ToolResult) -> list[tuple[str, bool, str | None]]:
    return [(c["name"], c["success"], c["error_code"]) for c in report(result)["tool_calls"]]


ADD_AND_TRY_SECRET = """
const out: Record<string, unknown> = { sum: await add({ a: 2, b: 3 }) };
try {
  out.secret = await (globalThis as any).__callTool__("secret_lookup", { key: "db" });
} catch (e: any) {
  out.error = { code: e.code, message: e.message };
}
return out;
"""


async def test_the_agents_run_has_no_stub_for_a_tool_its_policy_denies(world: World) -> None:
    result = await world.run("agent", 'return await secret_lookup({ key: "db" });')
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS, result.error
    assert "type-check" in result.error and "secret_lookup" in result.error
    (stubs,) = world.sandbox.stubs
    assert "function add(" in stubs
    assert "secret_lookup" not in stubs
    assert "execute_code" not in stubs
    assert nested(result) == []


async def test_the_agents_run_is_denied_a_call_its_policy_denies(world: World) -> None:
    result = await world.run("agent", ADD_AND_TRY_SECRET, check=False)
    assert result.success, result.error + result.output
    value = report(result)["value"]
    assert value["sum"] == 5
    assert "secret" not in value
    assert value["error"]["code"] == "denied_by_policy"
    assert "policies.agents.deny[0]" in value["error"]["message"]
    assert nested(result) == [("add", True, None), ("secret_lookup", False, "denied_by_policy")]
    assert report(result)["tool_calls_failed"] == 1


async def test_the_same_code_run_by_ops_may_call_the_tool(world: World) -> None:
    result = await world.run("ops", ADD_AND_TRY_SECRET, check=False)
    assert result.success, result.error + result.output
    assert report(result)["value"] == {"sum": 5, "secret": "the secret of db"}
    assert nested(result) == [("add", True, None), ("secret_lookup", True, None)]
    typed = await world.run("ops", 'return await secret_lookup({ key: "db" });')
    assert typed.success, typed.error
    assert report(typed)["value"] == "the secret of db"
    assert "function secret_lookup(" in world.sandbox.stubs[-1]


ROTATE = """
try {
  return { done: await rotate_keys({ service: "billing" }) };
} catch (e: any) {
  return { code: e.code, message: e.message };
}
"""


async def test_a_privileged_call_in_a_run_asks_approval_for_the_runs_starter(
    world: World,
) -> None:
    result = await world.run("agent", ROTATE)
    assert result.success, result.error + result.output
    value = report(result)["value"]
    assert value["code"] == "approval_required"
    assert nested(result) == [("rotate_keys", False, "approval_required")]
    (ticket,) = world.approvals.pending()
    assert ticket.ticket_id in value["message"]
    assert ticket.requested_by == "agent"
    assert ticket.tool_name == "rotate_keys"
    assert json.loads(ticket.arguments_json) == {"service": "billing"}

    # The ticket is the agent's: approved by ops, the agent's own call runs once.
    approved = await world.client("ops").approve(ticket.ticket_id, "planned rotation")
    assert approved.state is ApprovalState.APPROVED and approved.decided_by == "ops"
    agent = world.client("agent")
    arguments = {"service": "billing"}
    ran = await agent.dispatch("rotate_keys", arguments, approval_ticket=ticket.ticket_id)
    assert ran.success, ran.error
    assert ran.output == "rotated billing"
    replay = await agent.dispatch("rotate_keys", arguments, approval_ticket=ticket.ticket_id)
    assert replay.error_code is ErrorCode.DENIED_BY_POLICY


async def test_nested_calls_are_audited_under_the_runs_starter(world: World) -> None:
    agent_run = await world.run("agent", ADD_AND_TRY_SECRET, check=False)
    ops_run = await world.run("ops", ADD_AND_TRY_SECRET, check=False)
    assert agent_run.success and ops_run.success
    assert world.audit.flush()
    entries = read_entries(world.audit.path, limit=100)
    rows = sorted((e.principal, e.tool, e.error_code, e.run_id) for e in entries)
    agent_id, ops_id = report(agent_run)["run_id"], report(ops_run)["run_id"]
    assert agent_id != ops_id
    assert rows == sorted(
        [
            ("agent", "execute_code", "", ""),
            ("agent", "add", "", agent_id),
            ("agent", "secret_lookup", "denied_by_policy", agent_id),
            ("ops", "execute_code", "", ""),
            ("ops", "add", "", ops_id),
            ("ops", "secret_lookup", "", ops_id),
        ]
    )
    denial = next(e for e in entries if e.error_code == "denied_by_policy")
    assert denial.rule == "policies.agents.deny[0]"
    assert {e.principal for e in entries} == {"agent", "ops"}
