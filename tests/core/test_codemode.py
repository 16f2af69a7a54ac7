"""Code mode's bookkeeping around a sandbox (faked here; the real one is tested
end to end): grants, stubs for granted tools, nested calls, error codes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolwire.builtin.code import code_tools
from toolwire.capabilities import Capabilities
from toolwire.codemode import CodeMode
from toolwire.declare import tool
from toolwire.models import CallContext, ErrorCode
from toolwire.registry import ToolRegistry


@tool
async def double(n: int) -> int:
    """Double a number."""
    return n * 2


@dataclass
class Outcome:
    ok: bool = True
    value: Any = None
    console: str = ""
    error: str = ""
    limit_hit: str | None = None
    diagnostics: list[str] = field(default_factory=list)
    duration_seconds: float = 0.01


class FakeSandbox:
    """Plays the code: calls tools through the run's token as the bridge would."""

    def __init__(self, registry: ToolRegistry, capabilities: Capabilities, outcome: Outcome):
        self.registry, self.capabilities, self.outcome = registry, capabilities, outcome
        self.seen: dict[str, Any] = {}

    async def run(
        self, code: str, *, stubs: str, base_url: str, token: str, check: bool = True
    ) -> Outcome:
        self.seen = {"stubs": stubs, "base_url": base_url, "check": check, "token": token}
        grant = self.capabilities.lookup(token)
        assert grant is not None
        for name, args in [("double", {"n": 21}), ("execute_code", {"code": "1"}), ("nope", {})]:
            await self.registry.dispatch(name, args, principal=grant.as_principal())
        return self.outcome


def setup(outcome: Outcome, budget: int = 50) -> tuple[ToolRegistry, FakeSandbox, Capabilities]:
    registry, capabilities = ToolRegistry(), Capabilities()
    sandbox = FakeSandbox(registry, capabilities, outcome)
    mode = CodeMode(
        registry, capabilities, sandbox, lambda: "http://127.0.0.1:9", call_budget=budget
    )
    registry.register(double.tool)
    for t in code_tools(mode):
        registry.register(t)
    return registry, sandbox, capabilities


async def test_a_run_reports_its_value_and_nested_calls() -> None:
    registry, sandbox, capabilities = setup(Outcome(value={"answer": 42}, console="hi\n"))
    result = await registry.dispatch("execute_code", {"code": "return 1"}, CallContext(user_id="u"))
    assert result.success, result.error
    report = result.structured_output
    assert report["value"] == {"answer": 42} and report["console"] == "hi\n"
    calls = [(c["name"], c["success"], c["error_code"]) for c in report["tool_calls"]]
    assert calls == [
        ("double", True, None),
        ("execute_code", False, "denied_by_policy"),
        ("nope", False, "not_found"),
    ]
    assert "export async function double(" in sandbox.seen["stubs"]
    assert "execute_code" not in sandbox.seen["stubs"], "code cannot recurse"
    assert capabilities.lookup(sandbox.seen["token"]) is None, "the token dies with the run"


def calling_double(
    registry: ToolRegistry, sandbox: FakeSandbox, capabilities: Capabilities, times: int
) -> None:
    """Make the fake run call `double` `times` times with its run token."""

    async def run(code: str, **kwargs: Any) -> Outcome:
        grant = capabilities.lookup(kwargs["token"])
        assert grant is not None
        for _ in range(times):
            await registry.dispatch("double", {"n": 1}, principal=grant.as_principal())
        return sandbox.outcome

    sandbox.run = run  # type: ignore[method-assign]


async def test_the_budget_bounds_nested_calls() -> None:
    registry, sandbox, capabilities = setup(Outcome(), budget=1)
    calling_double(registry, sandbox, capabilities, 2)
    result = await registry.dispatch("execute_code", {"code": "x"})
    codes = [c["error_code"] for c in result.structured_output["tool_calls"]]
    assert codes == [None, "resource_exhausted"]


async def test_failures_map_to_error_codes() -> None:
    cases = [
        (Outcome(ok=False, diagnostics=["line 1: bad"]), ErrorCode.INVALID_ARGUMENTS, "type-check"),
        (Outcome(ok=False, limit_hit="timeout", error="30 s"), ErrorCode.TIMEOUT, "timeout limit"),
        (
            Outcome(ok=False, limit_hit="memory", error="heap"),
            ErrorCode.RESOURCE_EXHAUSTED,
            "memory",
        ),
        (Outcome(ok=False, error="TypeError: x"), ErrorCode.HANDLER_ERROR, "TypeError: x"),
    ]
    for outcome, code, fragment in cases:
        registry, _, _ = setup(outcome)
        result = await registry.dispatch("execute_code", {"code": "x", "check": False})
        assert result.error_code is code and fragment in result.error
        assert '"tool_calls"' in result.output, "a failed run still says what it called"


async def test_a_busy_run_keeps_its_report_small_enough_to_carry_its_value() -> None:
    registry, sandbox, capabilities = setup(Outcome(value="done"), budget=1000)
    calling_double(registry, sandbox, capabilities, 500)
    result = await registry.dispatch("execute_code", {"code": "x"})
    assert result.success and not result.truncated
    report = result.structured_output
    assert report["value"] == "done"
    assert len(report["tool_calls"]) == 20
    assert (report["tool_calls_total"], report["tool_calls_failed"]) == (500, 0)
