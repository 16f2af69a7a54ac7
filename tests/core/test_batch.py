"""Batches: consecutive read-only calls overlap, every other call runs alone, in order."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolwire.batch import (
    MAX_BATCH_CALLS,
    BatchCall,
    BatchError,
    run_batch,
    schedule,
    validate_batch,
)
from toolwire.models import ErrorCode, SafetyTier, ToolResult

R, W, P = SafetyTier.READ_ONLY, SafetyTier.SIDE_EFFECTING, SafetyTier.PRIVILEGED
TIERS = {"read": R, "write": W, "exec": P}
GENEROUS = 5.0
"""Seconds a call may wait for its peers: only reached when something is broken."""


def tier_of(name: str) -> SafetyTier | None:
    return TIERS.get(name)


def batch(*names: str) -> list[BatchCall]:
    return [BatchCall(call_id=f"c{i}", name=name) for i, name in enumerate(names)]


class Log:
    """Records the start and end of every call, and how many ran at once."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.running = 0
        self.max_running = 0

    async def run(self, call: BatchCall) -> ToolResult:
        index = int(call.call_id[1:])
        self.events.append(("start", index))
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        for _ in range(5):
            await asyncio.sleep(0)
        self.running -= 1
        self.events.append(("end", index))
        return ToolResult.ok(call.call_id)

    def at(self, kind: str, index: int) -> int:
        return self.events.index((kind, index))

    def starts(self) -> list[int]:
        return [i for kind, i in self.events if kind == "start"]


# schedule


@pytest.mark.parametrize(
    ("tiers", "steps"),
    [
        ([R, R, W, R, W, W, R, R], [[0, 1], [2], [3], [4], [5], [6, 7]]),
        ([], []),
        ([R], [[0]]),
        ([W], [[0]]),
        ([R, R, R], [[0, 1, 2]]),
        ([W, W], [[0], [1]]),
        ([P, R, R, P], [[0], [1, 2], [3]]),
        ([R, None, R], [[0], [1], [2]]),
        ([None, None], [[0], [1]]),
    ],
)
def test_schedule_examples(tiers: list[SafetyTier | None], steps: list[list[int]]) -> None:
    calls = [BatchCall(call_id="", name=str(i)) for i in range(len(tiers))]
    assert schedule(calls, lambda name: tiers[int(name)]) == steps


@given(st.lists(st.sampled_from([R, W, P, None]), max_size=40))
def test_schedule_keeps_order_and_groups_only_reads(tiers: list[SafetyTier | None]) -> None:
    calls = [BatchCall(call_id="", name=str(i)) for i in range(len(tiers))]
    steps = schedule(calls, lambda name: tiers[int(name)])
    assert [i for step in steps for i in step] == list(range(len(tiers)))
    assert all(step for step in steps)
    for step in steps:
        if len(step) > 1:
            assert all(tiers[i] is R for i in step)
    # maximal: two neighbouring steps are never both reads
    for a, b in itertools.pairwise(steps):
        assert not (tiers[a[-1]] is R and tiers[b[0]] is R)


# run_batch


async def test_read_only_calls_run_concurrently() -> None:
    n = 6
    started = 0
    all_started = asyncio.Event()

    async def barrier(call: BatchCall) -> ToolResult:
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        async with asyncio.timeout(GENEROUS):
            await all_started.wait()
        return ToolResult.ok(call.call_id)

    results = await run_batch(batch(*["read"] * n), tier_of, barrier)
    assert [r.success for r in results] == [True] * n, [r.error for r in results]


@pytest.mark.parametrize("name", ["write", "exec", "unknown"])
async def test_other_calls_never_overlap_and_start_in_request_order(name: str) -> None:
    log = Log()
    results = await run_batch(batch(*[name] * 6), tier_of, log.run)
    assert log.max_running == 1
    assert log.starts() == list(range(6))
    assert [r.output for r in results] == [f"c{i}" for i in range(6)]


async def test_a_write_between_read_groups_waits_for_the_first_and_precedes_the_second() -> None:
    log = Log()
    await run_batch(batch("read", "read", "write", "read", "read"), tier_of, log.run)
    write_start, write_end = log.at("start", 2), log.at("end", 2)
    assert log.at("end", 0) < write_start
    assert log.at("end", 1) < write_start
    assert write_end < log.at("start", 3)
    assert write_end < log.at("start", 4)
    assert log.max_running == 2


async def test_results_come_back_in_request_order_whatever_finishes_first() -> None:
    n = 5
    finished: list[str] = []

    async def slower_first(call: BatchCall) -> ToolResult:
        for _ in range(n - int(call.call_id[1:])):
            await asyncio.sleep(0)
        finished.append(call.call_id)
        return ToolResult.ok(call.call_id)

    results = await run_batch(batch(*["read"] * n), tier_of, slower_first)
    assert finished == [f"c{i}" for i in reversed(range(n))]
    assert [r.output for r in results] == [f"c{i}" for i in range(n)]


async def test_a_raising_call_fails_alone_and_the_batch_goes_on() -> None:
    async def flaky(call: BatchCall) -> ToolResult:
        if call.call_id in ("c1", "c3"):
            raise RuntimeError("disk on fire")
        return ToolResult.ok(call.call_id)

    results = await run_batch(batch("read", "read", "read", "write", "write"), tier_of, flaky)
    assert [r.success for r in results] == [True, False, True, False, True]
    for failed, call_id, name in ((results[1], "c1", "read"), (results[3], "c3", "write")):
        assert failed.error_code is ErrorCode.HANDLER_ERROR
        assert failed.error == f"call '{call_id}' to '{name}' failed: RuntimeError: disk on fire"


async def test_a_raising_call_without_an_id_is_named_by_its_tool() -> None:
    async def broken(call: BatchCall) -> ToolResult:
        raise ValueError("nope")

    async def silent(call: BatchCall) -> ToolResult:
        raise KeyError

    [result] = await run_batch([BatchCall(call_id="", name="write")], tier_of, broken)
    assert result.error == "call to 'write' failed: ValueError: nope"
    [result] = await run_batch([BatchCall(call_id="", name="read")], tier_of, silent)
    assert result.error == "call to 'read' failed: KeyError"


async def test_cancelling_the_batch_cancels_calls_in_flight_and_starts_no_more() -> None:
    started: list[str] = []
    cancelled: list[str] = []
    both_started = asyncio.Event()

    async def forever(call: BatchCall) -> ToolResult:
        started.append(call.call_id)
        if len(started) == 2:
            both_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(call.call_id)
            raise
        return ToolResult.ok(call.call_id)  # pragma: no cover

    task = asyncio.create_task(run_batch(batch("read", "read", "write"), tier_of, forever))
    async with asyncio.timeout(GENEROUS):
        await both_started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["c0", "c1"]
    assert started == ["c0", "c1"]


async def test_arguments_and_tickets_reach_run_one() -> None:
    seen: list[BatchCall] = []

    async def record(call: BatchCall) -> ToolResult:
        seen.append(call)
        return ToolResult.ok("")

    call = BatchCall(call_id="a", name="exec", arguments={"cmd": "ls"}, approval_ticket="t-1")
    await run_batch([call], tier_of, record)
    assert seen == [call]


async def test_an_empty_batch_runs_nothing() -> None:
    async def never(call: BatchCall) -> ToolResult:
        raise AssertionError("no call to run")

    assert await run_batch([], tier_of, never) == []


# validate_batch


def test_validate_accepts_a_full_batch_and_repeated_empty_ids() -> None:
    validate_batch(batch(*["read"] * MAX_BATCH_CALLS))
    validate_batch([BatchCall(call_id="", name="read"), BatchCall(call_id="", name="write")])


def test_validate_refuses_an_empty_batch() -> None:
    with pytest.raises(BatchError, match=r"^a batch needs at least one call$"):
        validate_batch([])


def test_validate_refuses_an_oversized_batch() -> None:
    with pytest.raises(BatchError) as e:
        validate_batch(batch(*["read"] * (MAX_BATCH_CALLS + 1)))
    assert str(e.value) == (
        f"a batch holds at most {MAX_BATCH_CALLS} calls, this one has {MAX_BATCH_CALLS + 1}; "
        "split it into several batches"
    )


def test_validate_refuses_a_duplicate_call_id() -> None:
    calls = [*batch("read", "write", "read"), BatchCall(call_id="c1", name="read")]
    with pytest.raises(BatchError) as e:
        validate_batch(calls)
    assert str(e.value) == "call_id 'c1' is used by calls 1 and 3; give every call its own id"


async def test_a_step_runs_at_most_max_concurrency_calls_at_once() -> None:
    """A long read-only step must not trip its own caller's concurrency limit."""
    in_flight, peak = 0, 0

    async def run_one(call: BatchCall) -> ToolResult:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        in_flight -= 1
        return ToolResult.ok(call.call_id)

    calls = [BatchCall(f"c{i}", "read") for i in range(10)]
    results = await run_batch(calls, lambda _: SafetyTier.READ_ONLY, run_one, max_concurrency=3)
    assert [r.output for r in results] == [c.call_id for c in calls]
    assert peak == 3
