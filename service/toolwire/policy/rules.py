"""Layer 1 of the policy: which tools exist for a caller.

A policy allows and denies tools by name (glob patterns), by group and by
safety tier. Deny wins over allow. The allow lists are alternatives: a tool is
allowed when it matches any entry of any of them, and when all of them are
empty every tool is allowed. A denial names the rule that denied, as a path
into the configuration (`policies.agents.deny[0]`), so an operator can find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from toolwire.models import SafetyTier, ToolDefinition

_STRICT = ConfigDict(frozen=True, extra="forbid")


class ExecMode(StrEnum):
    FULL = "full"
    """Every command runs (development only)."""
    ALLOWLIST = "allowlist"
    """Commands matching an allowlist pattern run; `on_miss` decides the rest."""
    DENY = "deny"
    """No command runs."""


class OnMiss(StrEnum):
    APPROVE = "approve"
    """A command no pattern allows waits for an operator's approval."""
    DENY = "deny"


class ExecApprovals(BaseModel):
    """Layer 2: how the calls of command-running tools are decided."""

    model_config = _STRICT

    mode: ExecMode = ExecMode.ALLOWLIST
    on_miss: OnMiss = OnMiss.APPROVE
    allowlist: tuple[str, ...] = ()
    """Patterns from the configuration, besides those in the allowlist store."""


class ToolPolicy(BaseModel):
    """What one caller (or, as `default`, every caller) may use."""

    model_config = _STRICT

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    allow_groups: tuple[str, ...] = ()
    deny_groups: tuple[str, ...] = ()
    allow_tiers: tuple[SafetyTier, ...] = ()
    deny_tiers: tuple[SafetyTier, ...] = ()
    require_approval: tuple[str, ...] = ()
    """Tools (glob patterns) whose every call needs an approval ticket."""
    approve_privileged: bool = True
    """Privileged tools need an approval ticket (command-running ones are
    decided by `exec` instead)."""
    exec: ExecApprovals = Field(default_factory=ExecApprovals)


@dataclass(frozen=True, slots=True)
class Denial:
    rule: str
    reason: str


def _first(patterns: tuple[str, ...], name: str) -> int | None:
    return next((i for i, p in enumerate(patterns) if fnmatchcase(name, p)), None)


def check_tool(policy: ToolPolicy, where: str, definition: ToolDefinition) -> Denial | None:
    """Whether `policy` (found at `where` in the configuration) lets a caller
    see and call the tool; None means allowed."""
    name, group, tier = definition.name, definition.group, definition.safety_tier
    if (i := _first(policy.deny, name)) is not None:
        return Denial(f"{where}.deny[{i}]", f"'{name}' matches deny pattern '{policy.deny[i]}'")
    if group and group in policy.deny_groups:
        i = policy.deny_groups.index(group)
        return Denial(f"{where}.deny_groups[{i}]", f"'{name}' is in the denied group '{group}'")
    if tier in policy.deny_tiers:
        i = policy.deny_tiers.index(tier)
        return Denial(f"{where}.deny_tiers[{i}]", f"'{name}' is {tier.value}, a denied tier")
    if not (policy.allow or policy.allow_groups or policy.allow_tiers):
        return None
    if (
        _first(policy.allow, name) is not None
        or (group and group in policy.allow_groups)
        or tier in policy.allow_tiers
    ):
        return None
    return Denial(
        f"{where}.allow",
        f"'{name}' (group '{group or '-'}', {tier.value}) matches none of the policy's "
        "allow, allow_groups and allow_tiers",
    )


def approval_reason(policy: ToolPolicy, where: str, definition: ToolDefinition) -> str | None:
    """Why a call of this tool needs approval under `policy`, or None.

    Command-running tools are left to the exec approvals: an allowlist pattern
    is a standing approval, so their tier alone does not ask again."""
    if definition.requires_approval:
        return f"tool '{definition.name}' is marked requires_approval"
    if (i := _first(policy.require_approval, definition.name)) is not None:
        return f"{where}.require_approval[{i}] covers '{definition.name}'"
    if (
        policy.approve_privileged
        and definition.safety_tier is SafetyTier.PRIVILEGED
        and not definition.command_argument
    ):
        return f"'{definition.name}' is privileged ({where}.approve_privileged)"
    return None
