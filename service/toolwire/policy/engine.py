"""The policy engine: every layer, in the order dispatch asks them.

Before validation, `admit` applies the caller's tool policy (layer 1) and, for
a code run, its grant; a denied tool is not even looked at further. After
validation, `decide` applies exec approvals to command-running tools (layer 2),
the approval gate (privileged tools, tools flagged `requires_approval`,
allowlist misses), and resolves where the call runs (layer 3). The engine
holds no transport and no clock of its own beyond the approval book's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolwire.approvals import ApprovalBook
from toolwire.auth import Principal
from toolwire.models import (
    ApprovalTicket,
    CallContext,
    ErrorCode,
    SandboxPlacement,
    ToolDefinition,
    ToolResult,
)

from .allowlist import AddedBy, ExecAllowlist, exact_patterns
from .commands import match_command
from .config import ToolwireConfig
from .placement import Sandboxing, resolve_placement
from .rules import Denial, ExecMode, OnMiss, ToolPolicy, approval_reason, check_tool

SUMMARY_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Allowed:
    """The call may run, here; `decision` and `rule` are for the audit."""

    placement: SandboxPlacement
    decision: str = "allowed"
    rule: str = ""
    ticket_id: str = ""


def denied(denial: Denial) -> ToolResult:
    return ToolResult.fail(
        ErrorCode.DENIED_BY_POLICY, f"denied by policy ({denial.rule}): {denial.reason}"
    ).model_copy(update={"policy_rule": denial.rule})


class PolicyEngine:
    def __init__(
        self,
        config: ToolwireConfig,
        *,
        approvals: ApprovalBook,
        allowlist: ExecAllowlist | None = None,
    ) -> None:
        self.config = config
        self.approvals = approvals
        self.allowlist = allowlist
        self._admitted: dict[tuple[str, int], tuple[ToolDefinition, Denial | None]] = {}
        """Layer-1 answers by policy and definition; each holds its definition,
        so the id in its key cannot be reused by another tool while it is cached."""
        self._commands: dict[str, str] = {}
        """The command line of each ticket of a command-running tool, for `remember`."""

    def placement_problems(self, sandboxing_of: Callable[[str], Sandboxing | None]) -> list[str]:
        """What the configuration's sandbox section asks of the tools at hand
        that they cannot give (their calls will be denied), for the operator
        at start-up; tools not registered yet (providers) are named too."""
        problems = []
        for name, override in sorted(self.config.sandbox.items()):
            sandboxing = sandboxing_of(name)
            if sandboxing is None:
                problems.append(f"sandbox.{name}: no tool '{name}' is registered (yet)")
                continue
            outcome = resolve_placement(name, sandboxing, override)
            if isinstance(outcome, Denial):
                problems.append(f"{outcome.rule}: every call will be denied: {outcome.reason}")
        return problems

    def policy_for(self, principal: Principal) -> tuple[str, ToolPolicy]:
        """The policy that applies to `principal` and where it is in the configuration."""
        policies = self.config.policies
        name = principal.policy or (principal.name if principal.name in policies else "default")
        return f"policies.{name}", policies[name]

    def admit(self, principal: Principal, definition: ToolDefinition) -> Denial | None:
        """Layer 1 (and a run's grant): may this caller use this tool at all?"""
        if principal.run is not None and not principal.run.permits(definition.name):
            return Denial("run grant", f"this code run may not call '{definition.name}'")
        where, policy = self.policy_for(principal)
        key = (where, id(definition))
        cached = self._admitted.get(key)
        if cached is not None and cached[0] is definition:  # immutable; policies fixed
            return cached[1]
        if len(self._admitted) > 65536:
            self._admitted.clear()
        denial = check_tool(policy, where, definition)
        self._admitted[key] = (definition, denial)
        return denial

    def visible(self, principal: Principal, definition: ToolDefinition) -> bool:
        return self.admit(principal, definition) is None

    def decide(
        self,
        principal: Principal,
        definition: ToolDefinition,
        sandboxing: Sandboxing,
        arguments: Mapping[str, Any],
        context: CallContext,
        ticket: str,
    ) -> Allowed | ToolResult:
        """Layers 2 and 3 and the approval gate, for validated arguments."""
        where, policy = self.policy_for(principal)
        placement = resolve_placement(
            definition.name, sandboxing, self.config.sandbox.get(definition.name)
        )
        if isinstance(placement, Denial):
            return denied(placement)
        reason = approval_reason(policy, where, definition)
        rule = ""
        if definition.command_argument:
            command = str(arguments.get(definition.command_argument, ""))
            verdict = self._exec(policy, where, command)
            if isinstance(verdict, Denial):
                return denied(verdict)
            if verdict is not None and reason is None:
                reason = verdict
            elif verdict is None:
                rule = f"{where}.exec"
        if reason is None:
            return Allowed(placement, rule=rule)
        arguments_json = json.dumps(arguments, ensure_ascii=False)
        if ticket:
            spent = self.approvals.spend(
                ticket,
                tool_name=definition.name,
                arguments_json=arguments_json,
                principal=principal.name,
            )
            if isinstance(spent, str):
                return denied(Denial("approval ticket", spent))
            return Allowed(placement, decision="approved", rule=reason, ticket_id=ticket)
        pending = self.approvals.request(
            tool_name=definition.name,
            arguments_json=arguments_json,
            summary=_summary(definition, arguments),
            requested_by=principal.name,
            reason=reason,
            context=context,
        )
        if definition.command_argument:
            if len(self._commands) > 4096:
                self._commands.clear()
            self._commands[pending.ticket_id] = str(arguments.get(definition.command_argument, ""))
        return _approval_required(definition.name, reason, pending)

    def _exec(self, policy: ToolPolicy, where: str, command: str) -> Denial | str | None:
        """Exec approvals for one command line: a denial, a reason to ask for
        approval, or None when it may run."""
        approvals = policy.exec
        if approvals.mode is ExecMode.DENY:
            return Denial(f"{where}.exec.mode", "exec approvals are in deny mode: no command runs")
        if approvals.mode is ExecMode.FULL:
            return None
        if self.allowlist is None:
            match = match_command(command, approvals.allowlist)
        else:
            match = self.allowlist.check(command, also=approvals.allowlist)
        if match.matched:
            return None
        if approvals.on_miss is OnMiss.DENY:
            return Denial(f"{where}.exec.allowlist", match.reason)
        return f"{match.reason} ({where}.exec.on_miss = approve)"

    def approve(
        self, ticket_id: str, principal: Principal, reason: str, remember: bool
    ) -> ApprovalTicket:
        """Approve a ticket; `remember` also allowlists its exact command line."""
        ticket = self.approvals.approve(ticket_id, by=principal.name, reason=reason)
        command = self._commands.pop(ticket_id, None)
        if remember and self.allowlist is not None and command:
            for pattern in exact_patterns(command):
                self.allowlist.add(pattern, AddedBy.AUTO)
        return ticket

    def deny(self, ticket_id: str, principal: Principal, reason: str) -> ApprovalTicket:
        return self.approvals.deny(ticket_id, by=principal.name, reason=reason)


def _summary(definition: ToolDefinition, arguments: Mapping[str, Any]) -> str:
    if definition.command_argument:
        text = f"{definition.name}: {arguments.get(definition.command_argument, '')}"
    else:
        text = f"{definition.name}({json.dumps(arguments, ensure_ascii=False)})"
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _approval_required(name: str, reason: str, ticket: ApprovalTicket) -> ToolResult:
    return ToolResult.fail(
        ErrorCode.APPROVAL_REQUIRED,
        f"'{name}' needs approval: {reason}. Ticket {ticket.ticket_id} waits for an operator "
        f"(`toolwire approvals approve {ticket.ticket_id}`); once it is approved, dispatch "
        f"the same call again with approval_ticket '{ticket.ticket_id}'",
    ).model_copy(update={"approval": ticket})
