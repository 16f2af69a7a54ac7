"""Run capabilities: what code started by `execute_code` may call, and what it did.

Each run gets a short-lived bearer token bound to a grant: the tools it may
call (by default every tool but `execute_code`, so code cannot recurse), a
budget of calls, an expiry. The HTTP listener resolves the token on every call
and dispatches through the grant, which refuses, counts and records: the
nested calls show up in the `execute_code` result for whoever dispatched it.
Tokens are kept only as SHA-256 digests, so the table never holds a secret
that a timing or memory leak could give away.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .models import CallContext, ErrorCode, ToolResult
from .registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class NestedCall:
    name: str
    success: bool
    error_code: ErrorCode | None
    duration_seconds: float


@dataclass(slots=True)
class RunGrant:
    run_id: str
    allowed: frozenset[str] | None
    """None: every tool except `denied`."""
    denied: frozenset[str]
    budget: int
    expires_at: float
    context: CallContext = field(default_factory=CallContext)
    """Who started the run; nested calls act on their behalf (memory scoping)."""
    used: int = 0
    calls: list[NestedCall] = field(default_factory=list)

    def permits(self, name: str) -> bool:
        if name in self.denied:
            return False
        return self.allowed is None or name in self.allowed


def granted_names(registry: ToolRegistry, grant: RunGrant) -> list[str]:
    """The registered tools a run may use, sorted by name."""
    return [d.name for d in registry.list() if grant.permits(d.name)]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Capabilities:
    """The live run grants of one server."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._grants: dict[bytes, RunGrant] = {}

    def issue(
        self,
        run_id: str,
        *,
        context: CallContext,
        allowed: frozenset[str] | None = None,
        denied: frozenset[str] = frozenset({"execute_code"}),
        budget: int = 50,
        ttl_seconds: float = 60.0,
    ) -> tuple[str, RunGrant]:
        token = secrets.token_urlsafe(32)
        grant = RunGrant(
            run_id=run_id,
            allowed=allowed,
            denied=denied,
            budget=budget,
            expires_at=self._clock() + ttl_seconds,
            context=context,
        )
        with self._lock:
            self._drop_expired()
            self._grants[_digest(token)] = grant
        return token, grant

    def revoke(self, token: str) -> None:
        with self._lock:
            self._grants.pop(_digest(token), None)

    def lookup(self, token: str) -> RunGrant | None:
        """The grant of a live token, or None (unknown, revoked or expired)."""
        grant = self._grants.get(_digest(token))
        if grant is None or grant.expires_at <= self._clock():
            return None
        return grant

    def _drop_expired(self) -> None:
        now = self._clock()
        for key in [k for k, g in self._grants.items() if g.expires_at <= now]:
            del self._grants[key]

    async def dispatch(
        self,
        registry: ToolRegistry,
        grant: RunGrant,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
    ) -> ToolResult:
        """A call made by a run: refused outside its grant or past its budget,
        otherwise dispatched on behalf of whoever started the run, and recorded."""
        if not grant.permits(name):
            result = ToolResult.fail(
                ErrorCode.DENIED_BY_POLICY, f"this code run may not call '{name}'"
            )
        elif grant.used >= grant.budget:
            result = ToolResult.fail(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"this code run has used its budget of {grant.budget} tool calls",
            )
        else:
            grant.used += 1
            remaining = grant.expires_at - self._clock()
            limit = remaining if timeout is None else min(timeout, remaining)
            result = await registry.dispatch(name, arguments, grant.context, timeout=limit)
        grant.calls.append(
            NestedCall(name, result.success, result.error_code, result.duration_seconds)
        )
        return result
