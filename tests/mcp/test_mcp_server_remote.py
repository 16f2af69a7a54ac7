"""`toolwire mcp --target` against a live `toolwire serve`, over stdio with the
MCP SDK's client: list and call through the server, and a provider joining
and leaving the live server reaches the MCP client as
`notifications/tools/list_changed`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from toolwire import SafetyTier, tool
from toolwire_client.aio import AsyncToolwireClient

pytestmark = pytest.mark.timeout(120)

WAIT = 30.0
"""How long a notification may take before the test fails (not a measurement)."""


class Sum(BaseModel):
    total: int


@tool(safety_tier=SafetyTier.READ_ONLY, output_schema=Sum)
async def add_numbers(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b)


class Notifications:
    def __init__(self) -> None:
        self.list_changed = 0
        self.changed = asyncio.Condition()

    async def handle(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            async with self.changed:
                self.list_changed += 1
                self.changed.notify_all()

    async def wait_beyond(self, count: int) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: self.list_changed > count), WAIT)


@asynccontextmanager
async def remote_session(
    toolwire: str, target: str, notifications: Notifications
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=toolwire, args=["mcp", "--target", target])
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write, message_handler=notifications.handle) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_remote_list_call_and_list_changed(toolwire_exe: str, live_server: Any) -> None:
    notifications = Notifications()
    async with remote_session(toolwire_exe, live_server.target, notifications) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "file_read" in names and "add_numbers" not in names

        listed = await session.call_tool("file_list", {"path": "."})
        assert listed.is_error is not True, text_of(listed)
        invalid = await session.call_tool("file_read", {})
        assert invalid.is_error is True
        assert text_of(invalid).startswith("invalid_arguments:")
        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool", {})
        assert raised.value.code == types.INVALID_PARAMS

        seen = notifications.list_changed
        async with (
            AsyncToolwireClient(live_server.target) as provider_client,
            provider_client.provide([add_numbers], name="mcp-test-provider"),
        ):
            await notifications.wait_beyond(seen)
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "add_numbers" in tools
            assert tools["add_numbers"].output_schema is not None
            assert tools["add_numbers"].annotations is not None
            assert tools["add_numbers"].annotations.read_only_hint is True

            result = await session.call_tool("add_numbers", {"a": 2, "b": 40})
            assert result.is_error is not True, text_of(result)
            assert result.structured_content == {"total": 42}
            assert '"total": 42' in text_of(result)
            seen = notifications.list_changed

        await notifications.wait_beyond(seen)
        names = {t.name for t in (await session.list_tools()).tools}
        assert "add_numbers" not in names
