"""DispatchBatch through gRPC on a real loopback socket: read-only calls really
overlap (each waits for all the others to start), side-effecting calls never do
and start in request order, a write between reads is a barrier, results come
back in request order under their call ids, malformed batches are
INVALID_ARGUMENT (INVALID_BATCH), and a policy decision about one call is just
that call's result.

Nothing here measures time: overlap is proven by calls that can only finish
if the others are running (with a generous timeout, so a failure fails instead
of hanging), and its absence by an in-flight counter.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from toolwire.approvals import ApprovalBook
from toolwire.auth import Authenticator, Scope, TokenEntry, digest
from toolwire.batch import MAX_BATCH_CALLS
from toolwire.capabilities import Capabilities
from toolwire.models import ErrorCode, SafetyTier, ToolDefinition
from toolwire.policy.config import parse_config
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.server import ServerConfig, ToolwireServers
from toolwire.tools import Tool, ToolContext
from toolwire_client import AsyncToolwireClient, BatchCall, ToolwireRpcError

WAIT = 10.0
"""How long a call waits for the others it needs running; a failure, not a hang."""


@dataclass
class Recorder:
    log: list[str] = field(default_factory=list)
    arrived: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    everyone: dict[str, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    finished: dict[str, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    in_flight: int = 0
    most_in_flight: int = 0


OBJECT = {"type": "object"}


def tools(rec: Recorder) -> list[Tool]:
    async def barrier(arguments: Any, context: ToolContext) -> str:
        """Read-only: returns only once `size` calls of its group have started."""
        group, size, tag = arguments["group"], arguments["size"], arguments["tag"]
        rec.log.append(f"start {tag}")
        rec.arrived[group] += 1
        if rec.arrived[group] == size:
            rec.everyone[group].set()
        await asyncio.wait_for(rec.everyone[group].wait(), WAIT)
        rec.log.append(f"end {tag}")
        return tag

    async def after(arguments: Any, context: ToolContext) -> str:
        """Read-only: finishes only after the call tagged `after` finished."""
        tag, first = arguments["tag"], arguments.get("after")
        if first:
            await asyncio.wait_for(rec.finished[first].wait(), WAIT)
        rec.log.append(f"end {tag}")
        rec.finished[tag].set()
        return tag

    async def write(arguments: Any, context: ToolContext) -> str:
        """Side-effecting: counts how many writes are in flight at once."""
        tag = arguments["tag"]
        rec.log.append(f"start {tag}")
        rec.in_flight += 1
        rec.most_in_flight = max(rec.most_in_flight, rec.in_flight)
        for _ in range(5):  # give any other write every chance to start meanwhile
            await asyncio.sleep(0)
        rec.in_flight -= 1
        rec.log.append(f"end {tag}")
        return tag

    def of(name: str, tier: SafetyTier, handler: Any, **extra: Any) -> Tool:
        definition = ToolDefinition(name=name, safety_tier=tier, input_schema=OBJECT, **extra)
        return Tool.of(definition, handler)

    ro = SafetyTier.READ_ONLY
    return [
        of("barrier", ro, barrier),
        of("after", ro, after),
        of("write", SafetyTier.SIDE_EFFECTING, write),
        of("admin_write", SafetyTier.PRIVILEGED, write, group="admin"),
        of("secret", ro, barrier, group="vault"),
    ]


@dataclass
class Batches:
    client: AsyncToolwireClient
    registrar: AsyncToolwireClient
    admin: AsyncToolwireClient
    rec: Recorder


@pytest.fixture
async def batches() -> AsyncIterator[Batches]:
    config = parse_config({"policies": {"agents": {"deny_groups": ["vault"]}}})
    rec = Recorder()
    approvals = ApprovalBook()
    registry = ToolRegistry(policy=PolicyEngine(config, approvals=approvals))
    for tool in tools(rec):
        registry.register(tool)
    capabilities = Capabilities()
    entries = (
        TokenEntry("agent", digest("agent-token"), frozenset({Scope.DISPATCH}), "agents"),
        TokenEntry("provider", digest("provider-token"), frozenset({Scope.REGISTER})),
        TokenEntry("admin", digest("admin-token"), frozenset({Scope.ADMIN})),
    )
    servers = ToolwireServers(
        registry,
        ServerConfig(port=0, http_port=0, grace_seconds=0),
        capabilities=capabilities,
        authenticator=Authenticator(entries, capabilities=capabilities),
    )
    await servers.start()
    target = f"127.0.0.1:{servers.grpc.port}"
    client = AsyncToolwireClient(target, token="agent-token", timeout=WAIT * 3)
    registrar = AsyncToolwireClient(target, token="provider-token", timeout=WAIT * 3)
    admin = AsyncToolwireClient(target, token="admin-token", timeout=WAIT * 3)
    try:
        yield Batches(client, registrar, admin, rec)
    finally:
        for c in (client, registrar, admin):
            await c.close()
        await servers.stop(0)
        approvals.close()
        registry.close()


def barrier(tag: str, group: str, size: int) -> BatchCall:
    return BatchCall("barrier", {"tag": tag, "group": group, "size": size}, call_id=tag)


def write(tag: str) -> BatchCall:
    return BatchCall("write", {"tag": tag}, call_id=tag)


async def test_read_only_calls_really_overlap(batches: Batches) -> None:
    calls = [barrier(f"r{i}", "all", 8) for i in range(8)]
    outcomes = await batches.client.dispatch_batch(calls)
    assert [o.result.error for o in outcomes] == [""] * 8
    assert [(o.call_id, o.result.output) for o in outcomes] == [
        (f"r{i}", f"r{i}") for i in range(8)
    ]
    # Every call started before any of them could finish.
    assert all(entry.startswith("start") for entry in batches.rec.log[:8])


async def test_side_effecting_calls_never_overlap_and_start_in_request_order(
    batches: Batches,
) -> None:
    tags = [f"w{i}" for i in range(10)]
    calls = [
        write(t) if i % 2 else BatchCall("admin_write", {"tag": t}, call_id=t)
        for i, t in enumerate(tags)
    ]
    outcomes = await batches.client.dispatch_batch(calls)
    # admin_write is privileged: each needs approval and runs nothing.
    for i, outcome in enumerate(outcomes):
        assert outcome.call_id == tags[i]
        if i % 2:
            assert outcome.result.success and outcome.result.output == tags[i]
        else:
            assert outcome.result.error_code is ErrorCode.APPROVAL_REQUIRED
    ran = [t for i, t in enumerate(tags) if i % 2]
    assert batches.rec.most_in_flight == 1
    assert batches.rec.log == [f"{edge} {t}" for t in ran for edge in ("start", "end")]


async def test_many_writes_run_one_at_a_time_in_order(batches: Batches) -> None:
    tags = [f"w{i}" for i in range(20)]
    outcomes = await batches.client.dispatch_batch([write(t) for t in tags])
    assert [o.result.output for o in outcomes] == tags
    assert batches.rec.most_in_flight == 1
    assert batches.rec.log == [f"{edge} {t}" for t in tags for edge in ("start", "end")]


async def test_results_come_back_in_request_order_whatever_finishes_first(
    batches: Batches,
) -> None:
    # r0 waits for r1, r1 for r2, ...: they finish in reverse order (and can
    # only finish at all if they run together).
    n = 6
    calls = [
        BatchCall(
            "after",
            {"tag": f"r{i}", **({"after": f"r{i + 1}"} if i < n - 1 else {})},
            call_id=f"id-{i}",
        )
        for i in range(n)
    ]
    outcomes = await batches.client.dispatch_batch(calls)
    assert batches.rec.log == [f"end r{i}" for i in reversed(range(n))]
    assert [(o.call_id, o.result.output) for o in outcomes] == [
        (f"id-{i}", f"r{i}") for i in range(n)
    ]


async def test_a_write_between_reads_is_a_barrier(batches: Batches) -> None:
    calls = [
        barrier("a1", "a", 2),
        barrier("a2", "a", 2),
        write("w"),
        barrier("b1", "b", 2),
        barrier("b2", "b", 2),
    ]
    outcomes = await batches.client.dispatch_batch(calls)
    assert [o.result.output for o in outcomes] == ["a1", "a2", "w", "b1", "b2"]
    log = batches.rec.log
    # Both reads before the write overlapped and finished before it started...
    assert set(log[:2]) == {"start a1", "start a2"}
    assert set(log[2:4]) == {"end a1", "end a2"}
    # ...the write ran alone...
    assert log[4:6] == ["start w", "end w"]
    # ...and the reads after it overlapped with each other, not with it.
    assert set(log[6:8]) == {"start b1", "start b2"}
    assert set(log[8:]) == {"end b1", "end b2"}


async def test_a_policy_decision_is_just_that_call_s_result(batches: Batches) -> None:
    calls = [
        barrier("r1", "x", 2),
        BatchCall("secret", {"tag": "s", "group": "y", "size": 1}, call_id="s"),
        barrier("r2", "x", 2),
        BatchCall("nope", {}, call_id="missing"),
        BatchCall("barrier", "{not json", call_id="bad"),
        write("w"),
    ]
    outcomes = await batches.client.dispatch_batch(calls)
    assert [o.call_id for o in outcomes] == ["r1", "s", "r2", "missing", "bad", "w"]
    by_id = {o.call_id: o.result for o in outcomes}
    assert by_id["r1"].success and by_id["r2"].success and by_id["w"].success
    denied = by_id["s"]
    assert denied.error_code is ErrorCode.DENIED_BY_POLICY
    assert denied.policy_rule == "policies.agents.deny_groups[0]"
    assert by_id["missing"].error_code is ErrorCode.NOT_FOUND
    assert by_id["bad"].error_code is ErrorCode.INVALID_ARGUMENTS
    assert "start s" not in batches.rec.log


async def test_an_approval_ticket_in_a_batch_pays_for_its_call_once(batches: Batches) -> None:
    call = BatchCall("admin_write", {"tag": "p"}, call_id="p")
    (asked,) = await batches.client.dispatch_batch([call])
    ticket = asked.result.approval
    assert ticket is not None and asked.result.error_code is ErrorCode.APPROVAL_REQUIRED
    with pytest.raises(ToolwireRpcError) as caught:
        await batches.client.approve(ticket.ticket_id)
    assert caught.value.reason == "SCOPE_MISSING"
    await batches.admin.approve(ticket.ticket_id)
    paid = BatchCall("admin_write", {"tag": "p"}, call_id="p", approval_ticket=ticket.ticket_id)
    ran = await batches.client.dispatch_batch([paid, write("w")])
    assert [o.result.output for o in ran] == ["p", "w"]
    (replay,) = await batches.client.dispatch_batch([paid])
    assert replay.result.error_code is ErrorCode.DENIED_BY_POLICY
    assert "already been used" in replay.result.error
    assert batches.rec.log == ["start p", "end p", "start w", "end w"]


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([], "at least one call"),
        (
            [
                BatchCall("write", {"tag": str(i)}, call_id=str(i))
                for i in range(MAX_BATCH_CALLS + 1)
            ],
            f"at most {MAX_BATCH_CALLS} calls",
        ),
        ([write("same"), write("other"), write("same")], "call_id 'same' is used by calls 0 and 2"),
    ],
    ids=["empty", "too-long", "duplicate-ids"],
)
async def test_a_malformed_batch_is_invalid_argument_and_runs_nothing(
    batches: Batches, calls: list[BatchCall], message: str
) -> None:
    with pytest.raises(ToolwireRpcError) as caught:
        await batches.client.dispatch_batch(calls)
    assert caught.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.reason == "INVALID_BATCH"
    assert message in caught.value.details
    assert batches.rec.log == []


async def test_a_full_batch_is_accepted(batches: Batches) -> None:
    calls = [write(f"w{i}") for i in range(MAX_BATCH_CALLS)]
    outcomes = await batches.client.dispatch_batch(calls)
    assert [o.result.output for o in outcomes] == [f"w{i}" for i in range(MAX_BATCH_CALLS)]


async def test_a_batch_needs_the_dispatch_scope(batches: Batches) -> None:
    with pytest.raises(ToolwireRpcError) as caught:
        await batches.registrar.dispatch_batch([write("w")])
    assert caught.value.code is grpc.StatusCode.PERMISSION_DENIED
    assert caught.value.reason == "SCOPE_MISSING"
    assert batches.rec.log == []
