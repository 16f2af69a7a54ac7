"""Concurrency limits: over the limit is RESOURCE_EXHAUSTED at once, never a wait."""

from __future__ import annotations

import re
import threading

import pytest
from toolwire.limits import ConcurrencyLimits, Slot
from toolwire.models import ErrorCode, ToolResult


def admitted(outcome: Slot | ToolResult) -> Slot:
    assert isinstance(outcome, Slot), outcome
    return outcome


def refused(outcome: Slot | ToolResult) -> ToolResult:
    assert isinstance(outcome, ToolResult), outcome
    assert not outcome.success
    assert outcome.error_code is ErrorCode.RESOURCE_EXHAUSTED
    return outcome


def test_no_limits_hand_out_one_shared_slot_and_count_nothing() -> None:
    limits = ConcurrencyLimits()
    slots = [admitted(limits.enter("agent-a", "read")) for _ in range(1000)]
    assert all(s is slots[0] for s in slots)
    assert limits.in_flight("agent-a") == 0
    assert limits.tool_in_flight("read") == 0
    slots[0].release()
    slots[0].release()
    assert admitted(limits.enter("agent-a", "read")) is slots[0]


def test_principal_limit_refuses_with_the_count() -> None:
    limits = ConcurrencyLimits(per_principal=2)
    held = [admitted(limits.enter("agent-a", "read")) for _ in range(2)]
    assert limits.in_flight("agent-a") == 2
    result = refused(limits.enter("agent-a", "write"))
    assert result.error == (
        "principal 'agent-a' already has 2 calls in flight (its limit); retry when one finishes"
    )
    held[0].release()
    admitted(limits.enter("agent-a", "write"))


def test_singular_call_in_messages() -> None:
    limits = ConcurrencyLimits(per_principal=1, per_tool={"exec": 1})
    admitted(limits.enter("agent-a", "exec"))
    assert refused(limits.enter("agent-a", "x")).error.startswith(
        "principal 'agent-a' already has 1 call in flight"
    )
    assert refused(limits.enter("agent-b", "exec")).error == (
        "tool 'exec' already runs 1 call at once (its limit); retry when one finishes"
    )


def test_principals_are_counted_independently() -> None:
    limits = ConcurrencyLimits(per_principal=1)
    admitted(limits.enter("agent-a", "read"))
    admitted(limits.enter("agent-b", "read"))
    refused(limits.enter("agent-a", "read"))
    assert limits.in_flight("agent-a") == 1
    assert limits.in_flight("agent-b") == 1
    assert limits.in_flight("agent-c") == 0


def test_tool_limit_from_the_definition() -> None:
    limits = ConcurrencyLimits()
    held = [admitted(limits.enter(p, "exec", tool_limit=2)) for p in ("a", "b")]
    assert limits.tool_in_flight("exec") == 2
    assert refused(limits.enter("c", "exec", tool_limit=2)).error == (
        "tool 'exec' already runs 2 calls at once (its limit); retry when one finishes"
    )
    admitted(limits.enter("c", "other", tool_limit=2))
    held[1].release()
    admitted(limits.enter("c", "exec", tool_limit=2))


def test_configured_tool_limit_overrides_the_definition() -> None:
    limits = ConcurrencyLimits(per_tool={"exec": 1, "read": 3})
    admitted(limits.enter("a", "exec", tool_limit=5))
    refused(limits.enter("b", "exec", tool_limit=5))
    for _ in range(3):
        admitted(limits.enter("a", "read", tool_limit=1))
    refused(limits.enter("a", "read", tool_limit=1))


def test_principal_limit_is_checked_before_the_tool_limit() -> None:
    limits = ConcurrencyLimits(per_principal=1, per_tool={"exec": 1})
    admitted(limits.enter("agent-a", "exec"))
    assert refused(limits.enter("agent-a", "exec")).error.startswith("principal 'agent-a'")


def test_a_refusal_takes_nothing() -> None:
    limits = ConcurrencyLimits(per_principal=2, per_tool={"exec": 1})
    admitted(limits.enter("agent-a", "exec"))
    for _ in range(10):
        refused(limits.enter("agent-b", "exec"))
    assert limits.in_flight("agent-b") == 0
    assert limits.tool_in_flight("exec") == 1
    admitted(limits.enter("agent-b", "read"))
    admitted(limits.enter("agent-b", "read"))


def test_release_is_idempotent_and_works_as_a_context_manager() -> None:
    limits = ConcurrencyLimits(per_principal=2, per_tool={"exec": 2})
    other = admitted(limits.enter("agent-a", "exec"))
    slot = admitted(limits.enter("agent-a", "exec"))
    with slot:
        assert limits.in_flight("agent-a") == 2
        assert limits.tool_in_flight("exec") == 2
    assert limits.in_flight("agent-a") == 1
    assert limits.tool_in_flight("exec") == 1
    slot.release()
    slot.release()
    assert limits.in_flight("agent-a") == 1
    assert limits.tool_in_flight("exec") == 1
    other.release()
    assert limits.in_flight("agent-a") == 0
    assert limits.tool_in_flight("exec") == 0


def test_release_on_error_inside_with() -> None:
    limits = ConcurrencyLimits(per_tool={"exec": 1})
    with pytest.raises(RuntimeError), admitted(limits.enter("a", "exec")):
        raise RuntimeError("handler broke")
    admitted(limits.enter("a", "exec"))


def test_a_principal_limit_alone_does_not_count_tools() -> None:
    limits = ConcurrencyLimits(per_principal=4)
    admitted(limits.enter("a", "read"))
    assert limits.tool_in_flight("read") == 0


@pytest.mark.parametrize(
    ("per_principal", "per_tool", "message"),
    [
        (0, None, "per_principal must be at least 1 or None, got 0"),
        (None, {"exec": 0}, "per_tool limits must be at least 1, got {'exec': 0}"),
    ],
)
def test_limits_below_one_are_refused(
    per_principal: int | None, per_tool: dict[str, int] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ConcurrencyLimits(per_principal=per_principal, per_tool=per_tool)


def test_threads_never_exceed_the_limit_and_leave_nothing_behind() -> None:
    limits = ConcurrencyLimits(per_principal=3, per_tool={"exec": 2})
    seen_over: list[int] = []
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(2000):
            outcome = limits.enter("agent-a", "exec")
            if isinstance(outcome, Slot):
                with outcome:
                    running = limits.tool_in_flight("exec")
                    if running > 2:
                        seen_over.append(running)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen_over == []
    assert limits.in_flight("agent-a") == 0
    assert limits.tool_in_flight("exec") == 0
