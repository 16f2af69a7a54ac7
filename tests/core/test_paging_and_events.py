"""List pages with tokens and versions, and the registry's event stream."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from toolwire.events import WATCH_QUEUE_SIZE, EventKind, WatchOverflowError, watch_events
from toolwire.models import ToolDefinition
from toolwire.paging import PageTokenError
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool


def _noop(arguments: Any, context: Any) -> str:
    return ""


def make(name: str) -> Tool:
    return Tool.of(ToolDefinition(name=name, input_schema={"type": "object"}), _noop)


def test_pages_cover_every_tool_once_in_order() -> None:
    registry = ToolRegistry()
    for i in range(25):
        registry.register(make(f"t{i:02d}"))
    seen, token, pages = [], "", 0
    while True:
        page = registry.list_page(page_size=10, page_token=token)
        seen += [t.name for t in page.tools]
        pages += 1
        assert page.version == 25 and page.etag == "v25"
        if not (token := page.next_page_token):
            break
    assert seen == [f"t{i:02d}" for i in range(25)] and pages == 3


def test_paging_stays_defined_while_tools_change() -> None:
    registry = ToolRegistry()
    for name in ("a", "b", "c", "d"):
        registry.register(make(name))
    first = registry.list_page(page_size=2)
    registry.unregister("b")
    registry.register(make("bb"))
    second = registry.list_page(page_size=2, page_token=first.next_page_token)
    assert [t.name for t in second.tools] == ["bb", "c"]
    assert second.version > first.version and second.etag != first.etag


@pytest.mark.parametrize(
    ("size", "token"), [(-1, ""), (1001, ""), (5, "garbage!"), (5, "eyJ4IjogMX0=")]
)
def test_bad_pages_are_refused(size: int, token: str) -> None:
    with pytest.raises(PageTokenError):
        ToolRegistry().list_page(page_size=size, page_token=token)


async def test_watch_starts_synced_and_sees_changes_from_any_thread() -> None:
    registry = ToolRegistry()
    registry.register(make("before"))
    stream = watch_events(registry)
    synced = await anext(stream)
    assert (synced.kind, synced.version) == (EventKind.SYNCED, 1)
    worker = threading.Thread(
        target=lambda: (registry.register(make("x")), registry.unregister("x"))
    )
    worker.start()
    added, removed = (
        await asyncio.wait_for(anext(stream), 5),
        await asyncio.wait_for(anext(stream), 5),
    )
    worker.join()
    assert (added.kind, added.name, added.version) == (EventKind.TOOL_ADDED, "x", 2)
    assert added.definition is not None and added.definition.name == "x"
    assert (removed.kind, removed.version) == (EventKind.TOOL_REMOVED, 3)
    await stream.aclose()


async def test_a_watcher_that_falls_behind_is_told_to_list_again() -> None:
    registry = ToolRegistry()
    stream = watch_events(registry)
    await anext(stream)
    for i in range(WATCH_QUEUE_SIZE + 5):
        registry.register(make(f"t{i}"))
    await asyncio.sleep(0.05)

    async def drain() -> None:
        async for _ in stream:
            pass

    with pytest.raises(WatchOverflowError, match="List the tools again"):
        await drain()
