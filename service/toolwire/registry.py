"""The registry: the tools an agent can call, and the one way to call them.

Every transport (gRPC, gRPC-web, the CLI, providers, code runs) goes through
`ToolRegistry.dispatch`, so lookup, policy, validation, approvals, limits,
timeouts, truncation and audit are decided here once, in that order:

    lookup → tool policy (layer 1, and a run's grant) → validation →
    concurrency limits → exec approvals (layer 2) and the approval gate →
    sandbox (layer 3) → handler under its timeout → truncation → audit

Mutations swap in a new table under a lock, so dispatch reads a consistent
snapshot without taking the lock. The policy engine, limits and audit log are
injected; a registry without them (a library user's) allows everything.
"""

from __future__ import annotations

import builtins
import difflib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .audit import AuditLog, CallRecord, Redaction
from .auth import LOCAL, Principal, Scope
from .batch import BatchCall, run_batch, validate_batch
from .dispatch import SyncWorkers, invoke
from .errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    NotVisibleError,
    ToolNotFoundError,
)
from .events import EventHub, EventKind, RegistryEvent
from .formats import ModelTools, to_model_tools
from .limits import ConcurrencyLimits
from .models import (
    CallContext,
    ErrorCode,
    ModelFormat,
    SafetyTier,
    SandboxPlacement,
    ToolDefinition,
    ToolResult,
)
from .names import name_problem, suggest_free_name
from .output import Output, finish
from .paging import paginate
from .policy.engine import Allowed, PolicyEngine, denied
from .policy.placement import Sandboxing
from .schema import normalize_definition
from .stubs import generate_stubs
from .tools import Tool, ToolContext
from .validation import ArgumentError, ArgumentValidator, parse_arguments

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024
DEFAULT_MAX_ARGUMENT_BYTES = 1024 * 1024
_NO_CONTEXT = CallContext()


@dataclass(frozen=True, slots=True)
class ListPage:
    tools: list[ToolDefinition]
    next_page_token: str
    version: int

    @property
    def etag(self) -> str:
        return f"v{self.version}"


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: Tool
    validator: ArgumentValidator
    owner: str | None
    """The provider session that serves the tool, if any."""
    principal: str | None
    """Who registered it (None: the server itself)."""
    timeout: float


class _Trace:
    """What the policy decided about a call: for its result and its audit record."""

    __slots__ = ("decision", "placement", "rule", "ticket_id")

    def __init__(self) -> None:
        self.decision = "allowed"
        self.rule = ""
        self.ticket_id = ""
        self.placement: SandboxPlacement | None = None


class ToolRegistry:
    """Safe for concurrent use from coroutines and threads."""

    def __init__(
        self,
        *,
        default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
        sync_workers: int = 32,
        clock: Callable[[], float] = time.monotonic,
        policy: PolicyEngine | None = None,
        limits: ConcurrencyLimits | None = None,
        audit: AuditLog | None = None,
        audit_arguments: Redaction = Redaction.REDACT,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.max_argument_bytes = max_argument_bytes
        self.policy = policy
        self.limits = limits
        self.audit = audit
        self.audit_arguments = audit_arguments
        self._wall_clock = wall_clock
        self._clock = clock
        self._workers = SyncWorkers(sync_workers)
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._version = 0
        self.events = EventHub()

    @property
    def version(self) -> int:
        """Grows with every change to the set of tools."""
        return self._version

    def register(
        self,
        tool: Tool,
        *,
        owner: str | None = None,
        principal: str | None = None,
        replace: bool = False,
    ) -> ToolDefinition:
        """Store the tool; returns its definition with both input forms filled in.

        With `replace`, a tool of the same name that `principal` registered
        before is replaced; another principal's tool never is.
        Raises InvalidDefinitionError, DuplicateToolError or NotOwnerError.
        """
        problem = name_problem(tool.definition.name)
        if problem:
            raise InvalidDefinitionError(problem)
        definition = normalize_definition(tool.definition)
        assert definition.input_schema is not None
        entry = _Entry(
            tool=Tool(definition, tool.handler, tool.blocking, tool.sandboxing),
            validator=ArgumentValidator(definition.input_schema),
            owner=owner,
            principal=principal,
            timeout=definition.timeout_seconds or self.default_timeout,
        )
        with self._lock:
            existing = self._entries.get(definition.name)
            if existing is not None:
                if not replace:
                    raise DuplicateToolError(
                        definition.name, suggest_free_name(definition.name, self._entries)
                    )
                if existing.principal is None or existing.principal != principal:
                    raise NotOwnerError(
                        f"tool '{definition.name}' was registered by "
                        f"{_registrant(existing)}; only it can replace the tool"
                    )
                self._version += 1
                self.events.publish(
                    RegistryEvent(EventKind.TOOL_REMOVED, self._version, definition.name)
                )
            self._entries = {**self._entries, definition.name: entry}
            self._version += 1
            self.events.publish(
                RegistryEvent(EventKind.TOOL_ADDED, self._version, definition.name, definition)
            )
        return definition

    def unregister(
        self, name: str, *, owner: str | None = None, principal: Principal | None = None
    ) -> None:
        """Remove a tool. With `owner`, only a tool of that provider; with
        `principal`, only a tool it registered, unless it is an admin."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise ToolNotFoundError(name)
            if owner is not None and entry.owner != owner:
                raise NotOwnerError(f"tool '{name}' was registered by another provider")
            if (
                principal is not None
                and Scope.ADMIN not in principal.scopes
                and entry.principal != principal.name
            ):
                raise NotOwnerError(
                    f"tool '{name}' was registered by {_registrant(entry)}; principal "
                    f"'{principal.name}' can only unregister its own tools (admins can "
                    "unregister any)"
                )
            self._entries = {k: v for k, v in self._entries.items() if k != name}
            self._version += 1
            self.events.publish(RegistryEvent(EventKind.TOOL_REMOVED, self._version, name))

    def unregister_owner(self, owner: str) -> list[str]:
        """Remove every tool of a provider (it disconnected); returns their names."""
        with self._lock:
            gone = [k for k, v in self._entries.items() if v.owner == owner]
            if gone:
                self._entries = {k: v for k, v in self._entries.items() if v.owner != owner}
                self._version += 1
                for name in gone:
                    self.events.publish(
                        RegistryEvent(
                            EventKind.TOOL_REMOVED, self._version, name, provider_id=owner
                        )
                    )
        return gone

    def get(self, name: str) -> ToolDefinition | None:
        entry = self._entries.get(name)
        return entry.tool.definition if entry else None

    def sandboxing_of(self, name: str) -> Sandboxing | None:
        entry = self._entries.get(name)
        return entry.tool.sandboxing if entry else None

    def owner_of(self, name: str) -> str | None:
        entry = self._entries.get(name)
        return entry.owner if entry else None

    def list(
        self, *, group: str = "", tier: SafetyTier | None = None, name_prefix: str = ""
    ) -> list[ToolDefinition]:
        """Sorted by name, filtered; empty filters match everything."""
        return self.list_page(group=group, tier=tier, name_prefix=name_prefix).tools

    def visible(self, principal: Principal | None, definition: ToolDefinition) -> bool:
        """Whether the caller's policy lets it see (and so call) the tool."""
        if principal is None or self.policy is None:
            return (
                principal is None or principal.run is None or principal.run.permits(definition.name)
            )
        return self.policy.visible(principal, definition)

    def list_page(
        self,
        *,
        group: str = "",
        tier: SafetyTier | None = None,
        name_prefix: str = "",
        page_size: int = 0,
        page_token: str = "",
        principal: Principal | None = None,
    ) -> ListPage:
        """One page of `list` (of the tools `principal` may see), with the
        registry version it reflects.

        Raises PageTokenError for a bad size or token."""
        with self._lock:
            version, entries = self._version, self._entries
        tools = [
            e.tool.definition
            for name, e in sorted(entries.items())
            if name.startswith(name_prefix)
            and (not group or e.tool.definition.group == group)
            and (tier is None or e.tool.definition.safety_tier is tier)
            and self.visible(principal, e.tool.definition)
        ]
        page, next_token = paginate(tools, page_size, page_token)
        return ListPage(page, next_token, version)

    def _selected(
        self, names: Sequence[str] | None, principal: Principal | None
    ) -> builtins.list[ToolDefinition]:
        if names is None:
            return self.list_page(principal=principal).tools
        entries = self._entries
        missing = [n for n in names if n not in entries]
        if missing:
            raise ToolNotFoundError(missing[0])
        chosen = [entries[n].tool.definition for n in sorted(set(names))]
        hidden = [d.name for d in chosen if not self.visible(principal, d)]
        if hidden:
            raise NotVisibleError(hidden[0])
        return chosen

    def generate_stubs(
        self, names: Sequence[str] | None = None, *, principal: Principal | None = None
    ) -> str:
        """Stubs for `names` (every tool the caller may see when None, none
        when empty)."""
        return generate_stubs(self._selected(names, principal))

    def to_model_tools(
        self,
        fmt: ModelFormat,
        names: Sequence[str] | None = None,
        *,
        principal: Principal | None = None,
    ) -> ModelTools:
        """The tools `names` (every tool the caller may see when None, none
        when empty) in `fmt`."""
        return to_model_tools(self._selected(names, principal), fmt)

    def _not_found(self, name: str) -> ToolResult:
        close = difflib.get_close_matches(name, self._entries.keys(), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return ToolResult.fail(ErrorCode.NOT_FOUND, f"no tool named '{name}'{hint}")

    async def dispatch(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None = None,
        context: CallContext | None = None,
        *,
        timeout: float | None = None,
        principal: Principal | None = None,
        ticket: str = "",
    ) -> ToolResult:
        """Look up, police, validate, run under the timeout, truncate, audit.
        Never raises: every failure is a `ToolResult` (cancelling the caller
        still cancels).

        `timeout` (e.g. the caller's remaining deadline) can only shorten the
        tool's own timeout. `principal` is the authenticated caller (None: the
        server itself); a code run's calls act with the context of whoever
        started the run, whatever context they claim. `ticket` is an approved
        approval ticket for exactly this call.
        """
        start = self._clock()
        caller = LOCAL if principal is None else principal
        grant = caller.run
        if grant is not None:
            context = grant.context
            remaining = grant.expires_at - start
            timeout = remaining if timeout is None else min(timeout, remaining)
        context = context or _NO_CONTEXT
        trace = _Trace()
        outcome = await self._dispatch(
            name, arguments, context, timeout, start, caller, ticket, trace
        )
        result = finish(outcome, self.max_output_bytes, self._clock() - start, trace.placement)
        if grant is not None:
            grant.record(name, result)
        if self.audit is not None:
            self._audit(caller, name, arguments, context, result, trace)
        return result

    async def _dispatch(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        context: CallContext,
        timeout: float | None,
        start: float,
        principal: Principal,
        ticket: str,
        trace: _Trace,
    ) -> Output | ToolResult:
        entry = self._entries.get(name)
        if entry is None:
            return self._not_found(name)
        definition = entry.tool.definition
        if principal.run is not None and (refusal := principal.run.admit(name)) is not None:
            return _traced(refusal, trace)
        policy = self.policy
        if policy is not None and (denial := policy.admit(principal, definition)) is not None:
            return _traced(denied(denial), trace)
        try:
            checked = entry.validator.check(parse_arguments(arguments, self.max_argument_bytes))
        except ArgumentError as e:
            return ToolResult.fail(
                ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for '{name}': {e}"
            )
        # The deadline and the limits are checked before the policy decides,
        # so that a call that cannot start now never spends its approval ticket.
        limit = entry.timeout if timeout is None else min(entry.timeout, timeout)
        if limit <= 0:
            return ToolResult.fail(
                ErrorCode.TIMEOUT, f"the caller's deadline passed before '{name}' could start"
            )
        slot = None
        if self.limits is not None:
            taken = self.limits.enter(principal.key, name, definition.max_concurrency)
            if isinstance(taken, ToolResult):
                return _traced(taken, trace, decision="refused")
            slot = taken
        try:
            placement = None
            if policy is not None:
                verdict = policy.decide(
                    principal, definition, entry.tool.sandboxing, checked, context, ticket
                )
                if not isinstance(verdict, Allowed):
                    return _traced(verdict, trace)
                placement = trace.placement = verdict.placement
                trace.decision, trace.rule, trace.ticket_id = (
                    verdict.decision,
                    verdict.rule,
                    verdict.ticket_id,
                )
            tool_context = ToolContext(name, context, start + limit, None, principal, placement)
            return await invoke(entry.tool, checked, tool_context, limit, self._workers)
        except Exception as e:  # a bug of ours must still not crash the caller
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, f"internal error running '{name}': {e}")
        finally:
            if slot is not None:
                slot.release()

    def _audit(
        self,
        principal: Principal,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        context: CallContext,
        result: ToolResult,
        trace: _Trace,
    ) -> None:
        """Append the call's record; an audit that fails never costs the result."""
        assert self.audit is not None
        try:
            decision = trace.decision
            if result.error_code is ErrorCode.NOT_FOUND:
                decision = "not_found"
            elif result.error_code is ErrorCode.INVALID_ARGUMENTS and decision == "allowed":
                decision = "invalid"
            self.audit.append(
                CallRecord(
                    at=self._wall_clock() - result.duration_seconds,
                    principal=principal.name,
                    tool=name,
                    raw_arguments=arguments,
                    redaction=self.audit_arguments,
                    decision=decision,
                    rule=trace.rule or result.policy_rule,
                    duration_seconds=result.duration_seconds,
                    success=result.success,
                    error_code=result.error_code.value if result.error_code else "",
                    session_id=context.session_id,
                    user_id=context.user_id,
                    ticket_id=trace.ticket_id
                    or (result.approval.ticket_id if result.approval else ""),
                    run_id=principal.run.run_id if principal.run is not None else "",
                )
            )
        except Exception:
            log.exception("could not audit a call of '%s'", name)

    async def dispatch_batch(
        self,
        calls: Sequence[BatchCall],
        context: CallContext | None = None,
        *,
        timeout: float | None = None,
        principal: Principal | None = None,
    ) -> builtins.list[ToolResult]:
        """The calls a model emitted in one turn: consecutive read-only calls
        concurrently, every other call alone, in order; results in request
        order. Raises BatchError for a malformed batch (empty, too long,
        repeated call ids)."""
        validate_batch(calls)

        def tier_of(name: str) -> SafetyTier | None:
            definition = self.get(name)
            return None if definition is None else definition.safety_tier

        async def run_one(call: BatchCall) -> ToolResult:
            return await self.dispatch(
                call.name,
                call.arguments,
                context,
                timeout=timeout,
                principal=principal,
                ticket=call.approval_ticket,
            )

        cap = None if self.limits is None else self.limits.per_principal
        return await run_batch(calls, tier_of, run_one, max_concurrency=cap)

    def close(self) -> None:
        self._workers.shutdown()


def _registrant(entry: _Entry) -> str:
    return "the server" if entry.principal is None else f"principal '{entry.principal}'"


def _traced(result: ToolResult, trace: _Trace, *, decision: str | None = None) -> ToolResult:
    if decision is not None:
        trace.decision = decision
    elif result.error_code is ErrorCode.APPROVAL_REQUIRED:
        trace.decision = "approval_required"
    elif result.error_code is ErrorCode.DENIED_BY_POLICY:
        trace.decision = "denied"
    else:
        trace.decision = "refused"
    trace.rule = result.policy_rule
    return result
