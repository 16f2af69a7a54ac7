"""A tool as the registry holds it: a definition and the handler that serves it."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .auth import LOCAL, Principal
from .models import CallContext, SandboxPlacement, ToolDefinition
from .policy.placement import HOST, Sandboxing

Handler = Callable[[Mapping[str, Any], "ToolContext"], Any]
"""Takes validated arguments and the call's context. May be sync or async; may
return a string, JSON-able data, a pydantic model or a `ToolResult`."""


class ToolContext:
    """What a handler may know about the call it serves.

    Sync handlers cannot be cancelled from outside; a long-running one should
    poll `cancelled` and stop when it is set. `deadline` is the
    `time.monotonic()` value after which the registry gives up on the call.
    `principal` is who the policy admitted the call for, `placement` the
    sandbox constraints the policy resolved, which a handler that can enforce
    them (memory caps of `exec`, `execute_code`) must apply.
    (A plain slots class: one is built per call, and a dataclass costs more.)
    """

    __slots__ = ("call", "cancelled", "deadline", "placement", "principal", "tool_name")

    def __init__(
        self,
        tool_name: str,
        call: CallContext,
        deadline: float,
        cancelled: CancelFlag | None = None,
        principal: Principal = LOCAL,
        placement: SandboxPlacement | None = None,
    ) -> None:
        self.tool_name = tool_name
        self.call = call
        self.deadline = deadline
        self.cancelled = cancelled or CancelFlag()
        self.principal = principal
        self.placement = placement

    def __repr__(self) -> str:
        return f"ToolContext(tool_name={self.tool_name!r}, call={self.call!r})"

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class CancelFlag:
    """Set when the registry gives up on a call; readable from any thread."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


@dataclass(frozen=True, slots=True)
class Tool:
    """A definition bound to its handler. `blocking` handlers run in worker
    threads so that they never stall the event loop."""

    definition: ToolDefinition
    handler: Handler
    blocking: bool = False
    sandboxing: Sandboxing = HOST
    """Where the handler runs, and which constraints it can enforce per call."""

    @classmethod
    def of(cls, definition: ToolDefinition, handler: Handler) -> Tool:
        return cls(definition, handler, blocking=not _is_async(handler))


def _is_async(handler: Callable[..., Any]) -> bool:
    """Async functions, and objects whose `__call__` is one."""
    call = type(handler).__call__ if callable(handler) else None
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


AsyncHandler = Callable[[Mapping[str, Any], ToolContext], Awaitable[Any]]
