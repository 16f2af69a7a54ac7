"""Concurrency limits per principal and per tool that refuse instead of queueing.

A caller over its limit gets RESOURCE_EXHAUSTED at once: an agent can retry or
do something else, while a queue would hold its call (and its deadline)
hostage to someone else's slow tool. `enter` runs on every dispatch, so a call
that no limit applies to takes a shared no-op slot and counts nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType

from .models import ErrorCode, ToolResult


class Slot:
    """What one admitted call holds; releasing it twice releases it once."""

    __slots__ = ("_limits", "_principal", "_released", "_tool")

    def __init__(
        self, limits: ConcurrencyLimits | None, principal: str | None, tool: str | None
    ) -> None:
        self._limits = limits
        self._principal = principal
        self._tool = tool
        self._released = False

    def release(self) -> None:
        if self._limits is not None:
            self._limits._release(self)

    def __enter__(self) -> Slot:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


_NO_SLOT = Slot(None, None, None)


class ConcurrencyLimits:
    """Safe for use from coroutines and threads (one lock, held briefly)."""

    def __init__(
        self, *, per_principal: int | None = None, per_tool: Mapping[str, int] | None = None
    ) -> None:
        """`per_principal`: calls in flight per principal (None: unlimited);
        `per_tool`: limits by tool name, overriding a tool's own max_concurrency.

        Raises ValueError for a limit below 1, which would refuse every call."""
        if per_principal is not None and per_principal < 1:
            raise ValueError(f"per_principal must be at least 1 or None, got {per_principal}")
        bad = {name: n for name, n in (per_tool or {}).items() if n < 1}
        if bad:
            raise ValueError(f"per_tool limits must be at least 1, got {bad}")
        self._per_principal = per_principal
        self._per_tool = dict(per_tool or {})
        self._lock = threading.Lock()
        self._principals: dict[str, int] = {}
        self._tools: dict[str, int] = {}

    def enter(self, principal: str, tool: str, tool_limit: int = 0) -> Slot | ToolResult:
        """Admit a call or refuse it with RESOURCE_EXHAUSTED; never waits.

        `tool_limit` is the tool's own max_concurrency (0: none). The principal's
        limit is checked first; a refused call takes nothing."""
        principal_limit = self._per_principal
        limit = self._per_tool.get(tool) or tool_limit
        if principal_limit is None and not limit:
            return _NO_SLOT
        with self._lock:
            if principal_limit is not None:
                running = self._principals.get(principal, 0)
                if running >= principal_limit:
                    return ToolResult.fail(
                        ErrorCode.RESOURCE_EXHAUSTED,
                        f"principal '{principal}' already has {_calls(running)} in flight "
                        "(its limit); retry when one finishes",
                    )
            if limit:
                running = self._tools.get(tool, 0)
                if running >= limit:
                    return ToolResult.fail(
                        ErrorCode.RESOURCE_EXHAUSTED,
                        f"tool '{tool}' already runs {_calls(running)} at once "
                        "(its limit); retry when one finishes",
                    )
                self._tools[tool] = running + 1
            if principal_limit is not None:
                self._principals[principal] = self._principals.get(principal, 0) + 1
        return Slot(
            self,
            principal if principal_limit is not None else None,
            tool if limit else None,
        )

    @property
    def per_principal(self) -> int | None:
        return self._per_principal

    def in_flight(self, principal: str) -> int:
        """Calls of `principal` in flight (counted only under a principal limit)."""
        with self._lock:
            return self._principals.get(principal, 0)

    def tool_in_flight(self, tool: str) -> int:
        """Calls of `tool` in flight (counted only while a limit applies to it)."""
        with self._lock:
            return self._tools.get(tool, 0)

    def _release(self, slot: Slot) -> None:
        with self._lock:
            if slot._released:
                return
            slot._released = True
            if slot._principal is not None:
                _decrement(self._principals, slot._principal)
            if slot._tool is not None:
                _decrement(self._tools, slot._tool)


def _decrement(counts: dict[str, int], key: str) -> None:
    """Drop a key at zero, so counters do not grow with every principal ever seen."""
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"
