"""The policy engine: which policy applies to whom, exec approvals in each mode,
the approval gate with tickets, and layer 3 (sandbox placement) — reported when
the tool can enforce it, a denial naming `sandbox.<tool>.<setting>` when not."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from toolwire.approvals import ApprovalBook
from toolwire.auth import Principal, Scope
from toolwire.models import (
    CallContext,
    ErrorCode,
    Runtime,
    SafetyTier,
    SandboxPlacement,
    ToolDefinition,
    ToolResult,
)
from toolwire.policy.allowlist import ExecAllowlist
from toolwire.policy.config import parse_config
from toolwire.policy.engine import Allowed, PolicyEngine
from toolwire.policy.placement import HOST, Constraint, Sandboxing
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool

EXEC = ToolDefinition(
    name="exec",
    group="runtime",
    safety_tier=SafetyTier.PRIVILEGED,
    command_argument="command",
    input_schema={"type": "object", "properties": {"command": {"type": "string"}}},
)
READ = ToolDefinition(name="file_read", group="files", safety_tier=SafetyTier.READ_ONLY)
WRITE = ToolDefinition(name="file_write", group="files")
REBOOT = ToolDefinition(name="reboot", safety_tier=SafetyTier.PRIVILEGED)
ADJUSTABLE = Sandboxing(
    SandboxPlacement(runtime=Runtime.HOST, network=True),
    frozenset({Constraint.MEMORY, Constraint.NETWORK}),
)
NO_CONTEXT = CallContext()


def principal(name: str, policy: str = "") -> Principal:
    return Principal(name, frozenset({Scope.DISPATCH}), policy)


def engine(data: dict[str, Any], **kwargs: Any) -> PolicyEngine:
    kwargs.setdefault("approvals", ApprovalBook())
    return PolicyEngine(parse_config(data), **kwargs)


def decide(
    policy: PolicyEngine,
    who: Principal,
    tool: ToolDefinition,
    arguments: dict[str, Any] | None = None,
    *,
    sandboxing: Sandboxing = HOST,
    ticket: str = "",
) -> Allowed | ToolResult:
    return policy.decide(who, tool, sandboxing, arguments or {}, NO_CONTEXT, ticket)


def denial_rule(verdict: Allowed | ToolResult) -> str:
    assert isinstance(verdict, ToolResult), verdict
    assert verdict.error_code is ErrorCode.DENIED_BY_POLICY, verdict
    assert verdict.error.startswith(f"denied by policy ({verdict.policy_rule}): ")
    return verdict.policy_rule


# -- whose policy ----------------------------------------------------------------


POLICIES = {
    "policies": {
        "default": {"deny": ["exec"]},
        "ops": {"allow": ["*"]},
        "readers": {"allow_tiers": ["read_only"]},
    }
}


def test_a_token_naming_a_policy_gets_that_policy() -> None:
    policy = engine(POLICIES)
    who = principal("ci-bot", policy="readers")
    assert policy.policy_for(who)[0] == "policies.readers"
    assert policy.admit(who, READ) is None
    denial = policy.admit(who, WRITE)
    assert denial is not None and denial.rule == "policies.readers.allow"


def test_a_principal_with_a_policy_of_its_name_gets_it() -> None:
    policy = engine(POLICIES)
    assert policy.policy_for(principal("ops"))[0] == "policies.ops"
    assert policy.admit(principal("ops"), EXEC) is None


def test_an_explicit_policy_wins_over_the_one_named_after_the_principal() -> None:
    policy = engine(POLICIES)
    who = principal("ops", policy="readers")
    denial = policy.admit(who, EXEC)
    assert denial is not None and denial.rule == "policies.readers.allow"


def test_anyone_else_falls_back_to_the_default() -> None:
    policy = engine(POLICIES)
    who = principal("stranger")
    assert policy.policy_for(who)[0] == "policies.default"
    denial = policy.admit(who, EXEC)
    assert denial is not None and denial.rule == "policies.default.deny[0]"
    assert policy.admit(who, WRITE) is None


def test_policies_are_applied_per_principal_in_any_order() -> None:
    """The admission cache is per policy: one caller's answer is not another's."""
    policy = engine(POLICIES)
    assert policy.admit(principal("ops"), EXEC) is None
    assert policy.admit(principal("agent"), EXEC) is not None
    assert policy.admit(principal("ops"), EXEC) is None


def test_a_new_tool_reusing_a_freed_definition_is_judged_afresh() -> None:
    """Tools come and go (providers); a cached decision about a tool that is
    gone must never be applied to another tool that happens to live at the same
    address afterwards."""
    policy = engine({"policies": {"default": {"deny": ["danger_*"]}}})
    registry = ToolRegistry(policy=policy)
    who = principal("agent")

    async def handler(arguments: Any, context: Any) -> str:
        return "ran"

    wrong = []
    for i in range(25):
        for name in (f"safe_{i}", f"danger_{i}"):
            registry.register(Tool.of(ToolDefinition(name=name), handler), principal="p")
            stored = registry.get(name)
            assert stored is not None
            if registry.visible(who, stored) != name.startswith("safe_"):
                wrong.append(name)
            del stored
            registry.unregister(name)
            gc.collect()
    assert wrong == []


# -- exec approvals --------------------------------------------------------------


def exec_policy(tmp_path: Path, **exec_settings: Any) -> PolicyEngine:
    return engine(
        {"policies": {"default": {"exec": exec_settings}}},
        allowlist=ExecAllowlist(tmp_path / "allow.sqlite"),
    )


def test_full_mode_runs_every_command(tmp_path: Path) -> None:
    policy = exec_policy(tmp_path, mode="full")
    verdict = decide(policy, principal("a"), EXEC, {"command": "rm -rf build; echo $(id)"})
    assert isinstance(verdict, Allowed)
    assert verdict.rule == "policies.default.exec"


def test_deny_mode_runs_nothing(tmp_path: Path) -> None:
    policy = exec_policy(tmp_path, mode="deny", allowlist=["ls*"])
    verdict = decide(policy, principal("a"), EXEC, {"command": "ls"})
    assert denial_rule(verdict) == "policies.default.exec.mode"


def test_allowlist_mode_runs_a_matching_command(tmp_path: Path) -> None:
    policy = exec_policy(tmp_path, allowlist=["ls*"])
    assert isinstance(decide(policy, principal("a"), EXEC, {"command": "ls -la"}), Allowed)


@pytest.mark.parametrize(
    "command",
    ["ls; rm -rf /", "ls && rm -rf /", "ls | sh", "ls\nrm -rf /", "ls $(rm -rf /)", "ls `id`"],
)
def test_allowlist_miss_with_on_miss_deny_is_a_denial(tmp_path: Path, command: str) -> None:
    policy = exec_policy(tmp_path, allowlist=["ls*"], on_miss="deny")
    verdict = decide(policy, principal("a"), EXEC, {"command": command})
    assert denial_rule(verdict) == "policies.default.exec.allowlist"


def test_allowlist_miss_with_on_miss_approve_asks_for_approval(tmp_path: Path) -> None:
    policy = exec_policy(tmp_path, allowlist=["ls*"])
    verdict = decide(policy, principal("a"), EXEC, {"command": "ls; rm -rf /"})
    assert isinstance(verdict, ToolResult)
    assert verdict.error_code is ErrorCode.APPROVAL_REQUIRED
    assert verdict.approval is not None
    assert verdict.approval.summary == "exec: ls; rm -rf /"
    assert "policies.default.exec.on_miss = approve" in verdict.approval.reason
    assert verdict.approval.ticket_id in verdict.error


def test_stored_patterns_count_and_record_their_last_use(tmp_path: Path) -> None:
    allowlist = ExecAllowlist(tmp_path / "allow.sqlite", clock=lambda: 1234.0)
    allowlist.add("git status*")
    policy = engine({"policies": {"default": {"exec": {"on_miss": "deny"}}}}, allowlist=allowlist)
    assert isinstance(decide(policy, principal("a"), EXEC, {"command": "git status -s"}), Allowed)
    (entry,) = allowlist.entries()
    assert entry.last_used_at == 1234.0


# -- the approval gate with tickets -----------------------------------------------


def test_an_approved_ticket_pays_for_exactly_one_call() -> None:
    book = ApprovalBook()
    policy = engine({}, approvals=book)
    who = principal("agent")
    asked = decide(policy, who, REBOOT, {"now": True})
    assert isinstance(asked, ToolResult) and asked.approval is not None
    ticket = asked.approval.ticket_id
    policy.approve(ticket, principal("admin"), "ok", remember=False)
    ran = decide(policy, who, REBOOT, {"now": True}, ticket=ticket)
    assert isinstance(ran, Allowed) and ran.decision == "approved" and ran.ticket_id == ticket
    again = decide(policy, who, REBOOT, {"now": True}, ticket=ticket)
    assert denial_rule(again) == "approval ticket"
    assert isinstance(again, ToolResult) and "already been used" in again.error


def test_remember_allowlists_the_exact_command_only(tmp_path: Path) -> None:
    allowlist = ExecAllowlist(tmp_path / "allow.sqlite")
    policy = engine({}, allowlist=allowlist)
    who = principal("agent")
    asked = decide(policy, who, EXEC, {"command": "make test*"})
    assert isinstance(asked, ToolResult) and asked.approval is not None
    policy.approve(asked.approval.ticket_id, principal("admin"), "", remember=True)
    assert allowlist.patterns() == ("make test[*]",)
    assert isinstance(decide(policy, who, EXEC, {"command": "make test*"}), Allowed)
    other = decide(policy, who, EXEC, {"command": "make test-all"})
    assert isinstance(other, ToolResult) and other.error_code is ErrorCode.APPROVAL_REQUIRED


# -- layer 3 ---------------------------------------------------------------------


def test_without_an_override_the_tool_s_own_placement_is_reported() -> None:
    verdict = decide(engine({}), principal("a"), WRITE)
    assert isinstance(verdict, Allowed) and verdict.placement == SandboxPlacement()


def test_an_override_the_tool_can_enforce_is_reported() -> None:
    policy = engine({"sandbox": {"file_write": {"network": False, "memory_mb": 64}}})
    verdict = decide(policy, principal("a"), WRITE, sandboxing=ADJUSTABLE)
    assert isinstance(verdict, Allowed)
    assert verdict.placement == SandboxPlacement(
        runtime=Runtime.HOST, network=False, memory_limit_bytes=64 * 1024 * 1024
    )


def test_a_memory_cap_never_loosens_the_tool_s_own() -> None:
    tight = Sandboxing(
        SandboxPlacement(runtime=Runtime.DENO, network=False, memory_limit_bytes=1024 * 1024),
        frozenset({Constraint.MEMORY}),
    )
    policy = engine({"sandbox": {"file_write": {"memory_mb": 512}}})
    verdict = decide(policy, principal("a"), WRITE, sandboxing=tight)
    assert isinstance(verdict, Allowed) and verdict.placement.memory_limit_bytes == 1024 * 1024


@pytest.mark.parametrize(
    ("override", "rule"),
    [
        ({"network": False}, "sandbox.file_write.network"),
        ({"memory_mb": 64}, "sandbox.file_write.memory_mb"),
    ],
)
def test_an_override_the_tool_cannot_enforce_is_a_denial(
    override: dict[str, Any], rule: str
) -> None:
    policy = engine({"sandbox": {"file_write": override}})
    verdict = decide(policy, principal("a"), WRITE)
    assert denial_rule(verdict) == rule
    assert isinstance(verdict, ToolResult) and "cannot" in verdict.error


def test_an_override_equal_to_what_the_tool_does_is_no_constraint() -> None:
    policy = engine({"sandbox": {"file_write": {"network": True}}})
    assert isinstance(decide(policy, principal("a"), WRITE), Allowed)


def test_placement_problems_name_unenforceable_and_unknown_tools() -> None:
    policy = engine({"sandbox": {"file_write": {"network": False}, "ghost": {"memory_mb": 1}}})
    problems = policy.placement_problems({"file_write": HOST}.get)
    assert problems[0] == "sandbox.file_write.network: every call will be denied: " + (
        "'file_write' runs on host, which cannot deny it network access; the configuration "
        "asks for what toolwire cannot enforce, so the call is refused"
    )
    assert problems[1] == "sandbox.ghost: no tool 'ghost' is registered (yet)"
    assert len(problems) == 2
