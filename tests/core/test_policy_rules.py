"""Layer 1 (`check_tool`) and the approval gate (`approval_reason`) on their
own: deny beats allow for names, groups and tiers; an empty allow list allows
all; the allow lists are alternatives; every denial names its rule."""

from __future__ import annotations

from typing import Any

import pytest
from toolwire.models import SafetyTier, ToolDefinition
from toolwire.policy.rules import ToolPolicy, approval_reason, check_tool

WHERE = "policies.agents"


def definition(
    name: str = "file_read",
    group: str = "files",
    tier: SafetyTier = SafetyTier.READ_ONLY,
    **extra: Any,
) -> ToolDefinition:
    return ToolDefinition(name=name, group=group, safety_tier=tier, **extra)


def rule_of(policy: ToolPolicy, tool: ToolDefinition) -> str | None:
    denial = check_tool(policy, WHERE, tool)
    return None if denial is None else denial.rule


# -- allow everything unless told otherwise --------------------------------------


@pytest.mark.parametrize("tier", list(SafetyTier))
def test_an_empty_policy_allows_every_tool(tier: SafetyTier) -> None:
    assert check_tool(ToolPolicy(), WHERE, definition("anything", "", tier)) is None


def test_an_empty_allow_list_allows_all_that_is_not_denied() -> None:
    policy = ToolPolicy(deny=("exec",))
    assert rule_of(policy, definition("file_read")) is None
    assert rule_of(policy, definition("web_fetch", "web")) is None
    assert rule_of(policy, definition("exec", "runtime")) == f"{WHERE}.deny[0]"


# -- deny beats allow ------------------------------------------------------------


def test_deny_by_name_beats_allow_by_name() -> None:
    policy = ToolPolicy(allow=("file_*",), deny=("web_*", "file_write"))
    assert rule_of(policy, definition("file_read")) is None
    denial = check_tool(policy, WHERE, definition("file_write"))
    assert denial is not None
    assert denial.rule == f"{WHERE}.deny[1]"
    assert "'file_write' matches deny pattern 'file_write'" in denial.reason


def test_deny_by_group_beats_allow_by_name_and_by_group() -> None:
    policy = ToolPolicy(allow=("exec",), allow_groups=("runtime",), deny_groups=("x", "runtime"))
    denial = check_tool(policy, WHERE, definition("exec", "runtime", SafetyTier.PRIVILEGED))
    assert denial is not None and denial.rule == f"{WHERE}.deny_groups[1]"
    assert "denied group 'runtime'" in denial.reason


def test_deny_by_tier_beats_allow_by_name_group_and_tier() -> None:
    policy = ToolPolicy(
        allow=("exec",),
        allow_groups=("runtime",),
        allow_tiers=(SafetyTier.PRIVILEGED,),
        deny_tiers=(SafetyTier.SIDE_EFFECTING, SafetyTier.PRIVILEGED),
    )
    denial = check_tool(policy, WHERE, definition("exec", "runtime", SafetyTier.PRIVILEGED))
    assert denial is not None and denial.rule == f"{WHERE}.deny_tiers[1]"
    assert "privileged, a denied tier" in denial.reason


def test_the_first_matching_deny_pattern_is_named() -> None:
    policy = ToolPolicy(deny=("nothing", "file_*", "file_read"))
    assert rule_of(policy, definition("file_read")) == f"{WHERE}.deny[1]"


def test_deny_patterns_are_case_sensitive_globs() -> None:
    policy = ToolPolicy(deny=("file_?ead", "[ew]*"))
    assert rule_of(policy, definition("file_read")) == f"{WHERE}.deny[0]"
    assert rule_of(policy, definition("exec")) == f"{WHERE}.deny[1]"
    assert rule_of(policy, definition("web_fetch")) == f"{WHERE}.deny[1]"
    assert rule_of(policy, definition("File_read")) is None


# -- the allow lists are alternatives ----------------------------------------------


@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        (ToolPolicy(allow=("file_read",)), {"file_read"}),
        (ToolPolicy(allow_groups=("web",)), {"web_fetch"}),
        (ToolPolicy(allow_tiers=(SafetyTier.PRIVILEGED,)), {"exec"}),
        (
            ToolPolicy(allow=("file_read",), allow_groups=("web",)),
            {"file_read", "web_fetch"},
        ),
        (
            ToolPolicy(allow_groups=("web",), allow_tiers=(SafetyTier.PRIVILEGED,)),
            {"web_fetch", "exec"},
        ),
    ],
)
def test_a_tool_matching_any_allow_entry_is_allowed(policy: ToolPolicy, allowed: set[str]) -> None:
    tools = [
        definition("file_read", "files", SafetyTier.READ_ONLY),
        definition("file_write", "files", SafetyTier.SIDE_EFFECTING),
        definition("web_fetch", "web", SafetyTier.READ_ONLY),
        definition("exec", "runtime", SafetyTier.PRIVILEGED),
    ]
    seen = {t.name for t in tools if check_tool(policy, WHERE, t) is None}
    assert seen == allowed
    for tool in tools:
        if tool.name not in allowed:
            assert rule_of(policy, tool) == f"{WHERE}.allow"


def test_an_allow_miss_says_what_the_tool_is() -> None:
    denial = check_tool(
        ToolPolicy(allow=("file_*",)), WHERE, definition("exec", "", SafetyTier.PRIVILEGED)
    )
    assert denial is not None
    assert "'exec' (group '-', privileged) matches none" in denial.reason


def test_a_tool_without_a_group_is_not_in_an_allowed_empty_group() -> None:
    policy = ToolPolicy(allow_groups=("",))
    # "" is no group; a policy cannot allow every ungrouped tool by naming it.
    assert rule_of(policy, definition("loose", "")) == f"{WHERE}.allow"


# -- the approval gate -----------------------------------------------------------


def test_a_plain_tool_needs_no_approval() -> None:
    assert approval_reason(ToolPolicy(), WHERE, definition()) is None


def test_privileged_tools_need_approval_unless_the_policy_says_otherwise() -> None:
    tool = definition("reboot", "", SafetyTier.PRIVILEGED)
    reason = approval_reason(ToolPolicy(), WHERE, tool)
    assert reason == f"'reboot' is privileged ({WHERE}.approve_privileged)"
    assert approval_reason(ToolPolicy(approve_privileged=False), WHERE, tool) is None


def test_command_running_tools_are_left_to_the_exec_approvals() -> None:
    tool = definition("exec", "runtime", SafetyTier.PRIVILEGED, command_argument="command")
    assert approval_reason(ToolPolicy(), WHERE, tool) is None


def test_a_tool_marked_requires_approval_always_needs_it() -> None:
    tool = definition("deploy", requires_approval=True)
    expected = "tool 'deploy' is marked requires_approval"
    assert approval_reason(ToolPolicy(), WHERE, tool) == expected
    assert approval_reason(ToolPolicy(approve_privileged=False), WHERE, tool) == expected
    command = definition("run", requires_approval=True, command_argument="command")
    assert approval_reason(ToolPolicy(), WHERE, command) == "tool 'run' is marked requires_approval"


def test_the_policy_can_require_approval_by_pattern() -> None:
    policy = ToolPolicy(require_approval=("x", "file_w*"))
    assert approval_reason(policy, WHERE, definition("file_write")) == (
        f"{WHERE}.require_approval[1] covers 'file_write'"
    )
    assert approval_reason(policy, WHERE, definition("file_read")) is None
