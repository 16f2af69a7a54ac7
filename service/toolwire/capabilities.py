"""Run capabilities: what code started by `execute_code` may call, and what it did.

Each run gets a short-lived bearer token bound to a grant: the tools it may
call (by default every tool but `execute_code`, so code cannot recurse), a
budget of calls, an expiry. The token authenticates as a principal of the one
auth system (`toolwire.auth`): the principal that started the run, narrowed to
the grant. The registry's dispatch admits each nested call through the grant
(refusing, counting) and records it, so the nested calls show up in the
`execute_code` result for whoever dispatched it. Tokens are kept only as
SHA-256 digests, so the table never holds a secret that a timing or memory
leak could give away.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .auth import LOCAL, Principal, Scope, digest
from .models import CallContext, ErrorCode, ToolResult


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
    principal: Principal = LOCAL
    """The principal that started the run; its policy applies to nested calls too."""
    used: int = 0
    calls: list[NestedCall] = field(default_factory=list)

    def permits(self, name: str) -> bool:
        if name in self.denied:
            return False
        return self.allowed is None or name in self.allowed

    def as_principal(self) -> Principal:
        """The run as a caller: its starter, able only to dispatch, within this grant."""
        starter = self.principal
        return Principal(starter.name, frozenset({Scope.DISPATCH}), starter.policy, self)

    def admit(self, name: str) -> ToolResult | None:
        """Refuse a call outside the grant or past the budget; else count it."""
        if not self.permits(name):
            return ToolResult.fail(
                ErrorCode.DENIED_BY_POLICY, f"this code run may not call '{name}'"
            ).model_copy(update={"policy_rule": "run grant"})
        if self.used >= self.budget:
            return ToolResult.fail(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"this code run has used its budget of {self.budget} tool calls",
            )
        self.used += 1
        return None

    def record(self, name: str, result: ToolResult) -> None:
        self.calls.append(
            NestedCall(name, result.success, result.error_code, result.duration_seconds)
        )


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
        principal: Principal = LOCAL,
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
            principal=principal,
        )
        with self._lock:
            self._drop_expired()
            self._grants[digest(token)] = grant
        return token, grant

    def revoke(self, token: str) -> None:
        with self._lock:
            self._grants.pop(digest(token), None)

    def lookup(self, token: str) -> RunGrant | None:
        """The grant of a live token, or None (unknown, revoked or expired)."""
        grant = self._grants.get(digest(token))
        if grant is None or grant.expires_at <= self._clock():
            return None
        return grant

    def _drop_expired(self) -> None:
        now = self._clock()
        for key in [k for k, g in self._grants.items() if g.expires_at <= now]:
            del self._grants[key]
