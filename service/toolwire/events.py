"""Registry events for watchers: what changed, at which registry version.

The registry publishes from whatever thread mutates it; each watcher has a
bounded queue on its own event loop. A watcher that falls too far behind is
told so (it must List again) instead of holding memory without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from .errors import ToolwireError
from .models import ToolDefinition

WATCH_QUEUE_SIZE = 1024


class EventKind(StrEnum):
    SYNCED = "synced"
    TOOL_ADDED = "tool_added"
    TOOL_REMOVED = "tool_removed"
    PROVIDER_DISCONNECTED = "provider_disconnected"


@dataclass(frozen=True, slots=True)
class RegistryEvent:
    kind: EventKind
    version: int
    name: str = ""
    definition: ToolDefinition | None = None
    provider_id: str = ""


class WatchOverflowError(ToolwireError):
    def __init__(self) -> None:
        super().__init__(
            f"this watcher fell more than {WATCH_QUEUE_SIZE} events behind; "
            "List the tools again and start a new Watch"
        )


_OVERFLOW = object()


class EventHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: set[Callable[[RegistryEvent], None]] = set()

    def publish(self, event: RegistryEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for deliver in listeners:
            deliver(event)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[RegistryEvent]]:
        """Events published from now on, in order, until the context ends."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue(WATCH_QUEUE_SIZE)

        def put(event: object) -> None:
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                queue._queue.clear()  # type: ignore[attr-defined]
                queue.put_nowait(_OVERFLOW)

        def deliver(event: RegistryEvent) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed
                loop.call_soon_threadsafe(put, event)

        async def events() -> AsyncIterator[RegistryEvent]:
            while True:
                item = await queue.get()
                if item is _OVERFLOW:
                    raise WatchOverflowError()
                assert isinstance(item, RegistryEvent)
                yield item

        with self._lock:
            self._listeners.add(deliver)
        try:
            yield events()
        finally:
            with self._lock:
                self._listeners.discard(deliver)


async def watch_events(registry: _Versioned) -> AsyncIterator[RegistryEvent]:
    """SYNCED at the current version, then every later event: the stream both
    transports serve. Events already reflected in that version are skipped."""
    async with registry.events.subscribe() as events:
        version = registry.version
        yield RegistryEvent(EventKind.SYNCED, version)
        async for event in events:
            if event.version > version or event.kind is EventKind.PROVIDER_DISCONNECTED:
                yield event


class _Versioned(Protocol):
    @property
    def version(self) -> int: ...

    @property
    def events(self) -> EventHub: ...
