"""A batch: the tool calls a model emits in one turn, run as fast as is safe.

Read-only calls cannot change what another call sees, so a run of consecutive
read-only calls runs concurrently. Every other call (side-effecting,
privileged, or a tool the registry does not know) runs alone, in the model's
order. Concurrency stays within consecutive reads on purpose: a read that the
model placed after a write expects to see that write, so no read ever jumps
over a side-effecting call, and no write ever overtakes a read placed before
it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ToolwireError
from .models import ErrorCode, SafetyTier, ToolResult

MAX_BATCH_CALLS = 128

TierOf = Callable[[str], SafetyTier | None]
"""A tool's safety tier by name; None for a tool that is not registered."""

RunOne = Callable[["BatchCall"], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class BatchCall:
    call_id: str
    """The model's id for the call, echoed so results can be matched to calls."""
    name: str
    arguments: str | Mapping[str, Any] | None = None
    approval_ticket: str = ""


class BatchError(ToolwireError):
    """A batch that cannot be run as it is."""


def validate_batch(calls: Sequence[BatchCall]) -> None:
    """Raise BatchError for an empty or oversized batch, or for a call_id used
    twice (the caller could not tell those results apart)."""
    if not calls:
        raise BatchError("a batch needs at least one call")
    if len(calls) > MAX_BATCH_CALLS:
        raise BatchError(
            f"a batch holds at most {MAX_BATCH_CALLS} calls, this one has {len(calls)}; "
            "split it into several batches"
        )
    first_seen: dict[str, int] = {}
    for index, call in enumerate(calls):
        if not call.call_id:
            continue
        earlier = first_seen.setdefault(call.call_id, index)
        if earlier != index:
            raise BatchError(
                f"call_id '{call.call_id}' is used by calls {earlier} and {index}; "
                "give every call its own id"
            )


def schedule(calls: Sequence[BatchCall], tier_of: TierOf) -> list[list[int]]:
    """The batch as steps of call indices, in request order: each maximal run
    of read-only calls is one step, every other call a step of its own."""
    steps: list[list[int]] = []
    reads: list[int] = []
    for index, call in enumerate(calls):
        if tier_of(call.name) is SafetyTier.READ_ONLY:
            reads.append(index)
            continue
        if reads:
            steps.append(reads)
            reads = []
        steps.append([index])
    if reads:
        steps.append(reads)
    return steps


async def run_batch(
    calls: Sequence[BatchCall],
    tier_of: TierOf,
    run_one: RunOne,
    *,
    max_concurrency: int | None = None,
) -> list[ToolResult]:
    """Run the steps of `schedule` one after another, the calls of a step
    concurrently (at most `max_concurrency` at once: a batch must not trip its
    own caller's concurrency limit); results in request order.

    A call whose `run_one` raises gets a HANDLER_ERROR result and the batch
    goes on, so one broken call cannot cost the model the others' results.
    Cancelling the batch cancels the calls in flight and propagates.
    """
    results: dict[int, ToolResult] = {}
    gate = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def gated(call: BatchCall) -> ToolResult:
        if gate is None:
            return await _guarded(run_one, call)
        async with gate:
            return await _guarded(run_one, call)

    for step in schedule(calls, tier_of):
        if len(step) == 1:
            results[step[0]] = await _guarded(run_one, calls[step[0]])
            continue
        async with asyncio.TaskGroup() as group:
            tasks = [(i, group.create_task(gated(calls[i]))) for i in step]
        for index, task in tasks:
            results[index] = task.result()
    return [results[i] for i in range(len(calls))]


async def _guarded(run_one: RunOne, call: BatchCall) -> ToolResult:
    try:
        return await run_one(call)
    except Exception as e:
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        return ToolResult.fail(ErrorCode.HANDLER_ERROR, f"{_describe(call)} failed: {reason}")


def _describe(call: BatchCall) -> str:
    if call.call_id:
        return f"call '{call.call_id}' to '{call.name}'"
    return f"call to '{call.name}'"
