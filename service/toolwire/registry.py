"""The registry: the tools an agent can call, and the one way to call them.

Every transport (gRPC, gRPC-web, the CLI, providers) goes through
`ToolRegistry.dispatch`, so lookup, validation, timeouts and truncation are
decided here once. Mutations swap in a new table under a lock, so dispatch
reads a consistent snapshot without taking the lock.
"""

from __future__ import annotations

import builtins
import difflib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .dispatch import SyncWorkers, invoke
from .errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ToolNotFoundError,
)
from .events import EventHub, EventKind, RegistryEvent
from .formats import ModelTools, to_model_tools
from .models import (
    CallContext,
    ErrorCode,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)
from .names import name_problem, suggest_free_name
from .output import Output, finish
from .paging import paginate
from .schema import normalize_definition
from .stubs import generate_stubs
from .tools import Tool, ToolContext
from .validation import ArgumentError, ArgumentValidator, parse_arguments

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
    timeout: float


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
    ) -> None:
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.max_argument_bytes = max_argument_bytes
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

    def register(self, tool: Tool, *, owner: str | None = None) -> ToolDefinition:
        """Store the tool; returns its definition with both input forms filled in.

        Raises InvalidDefinitionError or DuplicateToolError.
        """
        problem = name_problem(tool.definition.name)
        if problem:
            raise InvalidDefinitionError(problem)
        definition = normalize_definition(tool.definition)
        assert definition.input_schema is not None
        entry = _Entry(
            tool=Tool(definition, tool.handler, tool.blocking),
            validator=ArgumentValidator(definition.input_schema),
            owner=owner,
            timeout=definition.timeout_seconds or self.default_timeout,
        )
        with self._lock:
            if definition.name in self._entries:
                raise DuplicateToolError(
                    definition.name, suggest_free_name(definition.name, self._entries)
                )
            self._entries = {**self._entries, definition.name: entry}
            self._version += 1
            self.events.publish(
                RegistryEvent(EventKind.TOOL_ADDED, self._version, definition.name, definition)
            )
        return definition

    def unregister(self, name: str, *, owner: str | None = None) -> None:
        """Remove a tool. With `owner`, only a tool that owner registered."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise ToolNotFoundError(name)
            if owner is not None and entry.owner != owner:
                raise NotOwnerError(f"tool '{name}' was registered by another provider")
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

    def owner_of(self, name: str) -> str | None:
        entry = self._entries.get(name)
        return entry.owner if entry else None

    def list(
        self, *, group: str = "", tier: SafetyTier | None = None, name_prefix: str = ""
    ) -> list[ToolDefinition]:
        """Sorted by name, filtered; empty filters match everything."""
        return self.list_page(group=group, tier=tier, name_prefix=name_prefix).tools

    def list_page(
        self,
        *,
        group: str = "",
        tier: SafetyTier | None = None,
        name_prefix: str = "",
        page_size: int = 0,
        page_token: str = "",
    ) -> ListPage:
        """One page of `list`, with the registry version it reflects.

        Raises PageTokenError for a bad size or token."""
        with self._lock:
            version, entries = self._version, self._entries
        tools = [
            e.tool.definition
            for name, e in sorted(entries.items())
            if name.startswith(name_prefix)
            and (not group or e.tool.definition.group == group)
            and (tier is None or e.tool.definition.safety_tier is tier)
        ]
        page, next_token = paginate(tools, page_size, page_token)
        return ListPage(page, next_token, version)

    def _selected(self, names: Sequence[str] | None) -> builtins.list[ToolDefinition]:
        if names is None:
            return self.list()
        entries = self._entries
        missing = [n for n in names if n not in entries]
        if missing:
            raise ToolNotFoundError(missing[0])
        return [entries[n].tool.definition for n in sorted(set(names))]

    def generate_stubs(self, names: Sequence[str] | None = None) -> str:
        """Stubs for `names` (every tool when None, none when empty)."""
        return generate_stubs(self._selected(names))

    def to_model_tools(self, fmt: ModelFormat, names: Sequence[str] | None = None) -> ModelTools:
        """The tools `names` (every tool when None, none when empty) in `fmt`."""
        return to_model_tools(self._selected(names), fmt)

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
    ) -> ToolResult:
        """Look up, validate, run under the timeout, truncate. Never raises:
        every failure is a `ToolResult` (cancelling the caller still cancels).

        `timeout` (e.g. the caller's remaining deadline) can only shorten the
        tool's own timeout.
        """
        start = self._clock()
        outcome = await self._dispatch(name, arguments, context or _NO_CONTEXT, timeout, start)
        return finish(outcome, self.max_output_bytes, self._clock() - start)

    async def _dispatch(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        context: CallContext,
        timeout: float | None,
        start: float,
    ) -> Output | ToolResult:
        entry = self._entries.get(name)
        if entry is None:
            return self._not_found(name)
        try:
            checked = entry.validator.check(parse_arguments(arguments, self.max_argument_bytes))
        except ArgumentError as e:
            return ToolResult.fail(
                ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for '{name}': {e}"
            )
        limit = entry.timeout if timeout is None else min(entry.timeout, timeout)
        if limit <= 0:
            return ToolResult.fail(
                ErrorCode.TIMEOUT, f"the caller's deadline passed before '{name}' could start"
            )
        tool_context = ToolContext(tool_name=name, call=context, deadline=start + limit)
        try:
            return await invoke(entry.tool, checked, tool_context, limit, self._workers)
        except Exception as e:  # a bug of ours must still not crash the caller
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, f"internal error running '{name}': {e}")

    def close(self) -> None:
        self._workers.shutdown()
