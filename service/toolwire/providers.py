"""Tools served by other processes, over a stream the transport keeps open.

A `ProviderSession` is the core's view of one provider connection: it turns
registry calls into call orders on an outbound queue and matches the
provider's outcomes back by call id. The transport only pumps messages
between the stream and the session; when the stream ends, the hub
unregisters the provider's tools and fails its in-flight calls.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .auth import LOCAL, Principal, Scope
from .errors import NotOwnerError, ProviderNotFoundError
from .events import EventKind, RegistryEvent
from .models import CallContext, ErrorCode, ToolDefinition, ToolResult
from .policy.placement import PROVIDER
from .registry import ToolRegistry
from .tools import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class CallOrder:
    call_id: str
    name: str
    arguments_json: str
    context: CallContext
    timeout_seconds: float


@dataclass(frozen=True, slots=True)
class CallCancelled:
    call_id: str


Outbound = CallOrder | CallCancelled


class ProviderSession:
    def __init__(self, provider_id: str, name: str, principal: Principal = LOCAL) -> None:
        self.provider_id = provider_id
        self.name = name
        self.principal = principal
        """Who opened the stream: the tools it serves belong to this principal."""
        self.outbound: asyncio.Queue[Outbound | None] = asyncio.Queue()
        """Messages for the provider, in order; None ends the stream."""
        self._pending: dict[str, asyncio.Future[ToolResult]] = {}
        self._ids = itertools.count(1)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def tool(self, definition: ToolDefinition) -> Tool:
        """A tool whose handler forwards to this provider."""

        async def forward(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            return await self.call(definition.name, arguments, context)

        return Tool(definition, forward, blocking=False, sandboxing=PROVIDER)

    async def call(
        self, name: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        if self._closed:
            return self._unavailable(name)
        call_id = f"{self.provider_id}-{next(self._ids)}"
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        self.outbound.put_nowait(
            CallOrder(call_id, name, json.dumps(arguments), context.call, context.remaining())
        )
        try:
            return await future
        except asyncio.CancelledError:
            if not self._closed:
                self.outbound.put_nowait(CallCancelled(call_id))
            raise
        finally:
            self._pending.pop(call_id, None)

    def resolve(self, call_id: str, result: ToolResult) -> bool:
        """Deliver an outcome; False for an unknown or finished call (ignored)."""
        future = self._pending.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(result)
        return True

    def _unavailable(self, name: str) -> ToolResult:
        return ToolResult.fail(
            ErrorCode.PROVIDER_UNAVAILABLE,
            f"the provider '{self.name}' that serves '{name}' is disconnected",
        )

    def end_stream(self) -> None:
        """The provider's side is gone: stop sending to it."""
        self.outbound.put_nowait(None)

    def close(self) -> None:
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_result(
                    ToolResult.fail(
                        ErrorCode.PROVIDER_UNAVAILABLE,
                        f"the provider '{self.name}' disconnected before the call finished",
                    )
                )


class ProviderHub:
    """The connected providers of one registry."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._sessions: dict[str, ProviderSession] = {}

    def connect(
        self, name: str, tools: list[ToolDefinition], principal: Principal = LOCAL
    ) -> tuple[ProviderSession, list[ToolDefinition]]:
        """A new session with its announced tools registered, all or none.

        Raises the registry's errors for the first tool that cannot be registered.
        """
        session = ProviderSession(uuid.uuid4().hex[:16], name or "provider", principal)
        stored: list[ToolDefinition] = []
        try:
            for definition in tools:
                stored.append(self._register(session, definition, replace=False))
        except Exception:
            self.registry.unregister_owner(session.provider_id)
            raise
        self._sessions[session.provider_id] = session
        return session, stored

    def register(
        self,
        provider_id: str,
        definition: ToolDefinition,
        principal: Principal = LOCAL,
        *,
        replace: bool = False,
    ) -> ToolDefinition:
        """Register a tool served by a connected provider of `principal`'s."""
        session = self._sessions.get(provider_id)
        if session is None or session.closed:
            raise ProviderNotFoundError(provider_id)
        if session.principal.name != principal.name and Scope.ADMIN not in principal.scopes:
            raise NotOwnerError(
                f"provider '{provider_id}' belongs to principal '{session.principal.name}'; "
                f"'{principal.name}' cannot register tools on it"
            )
        return self._register(session, definition, replace=replace)

    def _register(
        self, session: ProviderSession, definition: ToolDefinition, *, replace: bool
    ) -> ToolDefinition:
        return self.registry.register(
            session.tool(definition),
            owner=session.provider_id,
            principal=session.principal.name,
            replace=replace,
        )

    def disconnect(self, session: ProviderSession) -> list[str]:
        """Unregister the provider's tools and fail its in-flight calls."""
        self._sessions.pop(session.provider_id, None)
        gone = self.registry.unregister_owner(session.provider_id)
        session.close()
        self.registry.events.publish(
            RegistryEvent(
                EventKind.PROVIDER_DISCONNECTED,
                self.registry.version,
                provider_id=session.provider_id,
            )
        )
        return gone
