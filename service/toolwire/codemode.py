"""Code mode: `execute_code` runs in the Deno sandbox and calls tools back.

For each run: a grant (which tools, how many calls, how long) and its token,
stubs generated for exactly the granted tools, the sandbox run against the
registry's HTTP listener, then the token revoked and the grant's record of
nested calls put into the result for whoever dispatched `execute_code`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from .capabilities import Capabilities, RunGrant
from .models import ErrorCode, ToolResult
from .registry import ToolRegistry
from .tools import ToolContext


class SandboxOutcome(Protocol):
    ok: bool
    value: Any
    console: str
    error: str
    limit_hit: str | None
    diagnostics: list[str]
    duration_seconds: float


class Sandbox(Protocol):
    async def run(
        self, code: str, *, stubs: str, base_url: str, token: str, check: bool = True
    ) -> SandboxOutcome: ...


_LIMIT_CODES = {
    "timeout": ErrorCode.TIMEOUT,
    "memory": ErrorCode.RESOURCE_EXHAUSTED,
    "output": ErrorCode.RESOURCE_EXHAUSTED,
}


class CodeMode:
    """The `CodeRunner` behind `execute_code`."""

    def __init__(
        self,
        registry: ToolRegistry,
        capabilities: Capabilities,
        sandbox: Sandbox,
        base_url: Callable[[], str],
        *,
        call_budget: int = 50,
        run_ttl_seconds: float = 60.0,
    ) -> None:
        self._registry = registry
        self._capabilities = capabilities
        self._sandbox = sandbox
        self._base_url = base_url
        self._budget = call_budget
        self._ttl = run_ttl_seconds

    async def __call__(self, code: str, check: bool, context: ToolContext) -> ToolResult:
        run_id = uuid.uuid4().hex[:12]
        token, grant = self._capabilities.issue(
            run_id,
            context=context.call,
            principal=context.principal,
            budget=self._budget,
            ttl_seconds=self._ttl,
        )
        try:
            stubs = self._registry.generate_stubs(principal=grant.as_principal())
            outcome = await self._sandbox.run(
                code, stubs=stubs, base_url=self._base_url(), token=token, check=check
            )
        finally:
            self._capabilities.revoke(token)
        return _result(run_id, outcome, grant)


MAX_REPORTED_CALLS = 20
"""A run may make hundreds of calls; listing each would push its own return
value past the registry's output limit. Totals cover the rest."""


def _calls(grant: RunGrant) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "success": c.success,
            "error_code": c.error_code.value if c.error_code else None,
            "duration_seconds": round(c.duration_seconds, 6),
        }
        for c in grant.calls[:MAX_REPORTED_CALLS]
    ]


def _result(run_id: str, outcome: SandboxOutcome, grant: RunGrant) -> ToolResult:
    report: dict[str, Any] = {
        "run_id": run_id,
        "value": outcome.value,
        "console": outcome.console,
        "tool_calls": _calls(grant),
        "tool_calls_total": len(grant.calls),
        "tool_calls_failed": sum(not c.success for c in grant.calls),
        "duration_seconds": round(outcome.duration_seconds, 6),
        "limit_hit": outcome.limit_hit,
    }
    if outcome.ok:
        return ToolResult.ok(json.dumps(report, ensure_ascii=False), report)
    if outcome.diagnostics:
        code, message = (
            ErrorCode.INVALID_ARGUMENTS,
            "the code does not type-check:\n" + "\n".join(outcome.diagnostics),
        )
    elif outcome.limit_hit:
        code = _LIMIT_CODES.get(outcome.limit_hit, ErrorCode.RESOURCE_EXHAUSTED)
        message = f"the code hit the {outcome.limit_hit} limit: {outcome.error}"
    else:
        code, message = ErrorCode.HANDLER_ERROR, f"the code failed: {outcome.error}"
    return ToolResult(
        success=False,
        output=json.dumps(report, ensure_ascii=False),
        error=message,
        error_code=code,
    )
