"""`toolwire mcp --transport http` in process, driven over streamable HTTP by
the MCP SDK's client: the same calls as over stdio, and a provider joining
the in-process registry (through its gRPC port) reaches the client as
`notifications/tools/list_changed`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from toolwire import SafetyTier, tool
from toolwire_client.aio import AsyncToolwireClient

pytestmark = pytest.mark.timeout(120)

WAIT = 30.0
"""How long a notification may take before the test fails (not a measurement)."""


@tool(safety_tier=SafetyTier.SIDE_EFFECTING)
async def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_streamable_http_in_process(
    spawn_toolwire: Callable[..., Any], free_port: Callable[[], int], tmp_path: Any
) -> None:
    grpc_port = free_port()
    server = spawn_toolwire(
        "mcp", "--transport", "http", "--mcp-port", "0",
        "--port", str(grpc_port), "--http-port", "0", "--data-dir", str(tmp_path / "data"),
    )  # fmt: skip
    url = server.wait_for(r"MCP over streamable HTTP at (\S+)").group(1)

    changed = asyncio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        init = await session.initialize()
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed

        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["file_read"].annotations is not None
        assert tools["file_read"].annotations.read_only_hint is True

        written = await session.call_tool("file_write", {"path": "a.txt", "content": "over HTTP"})
        assert written.is_error is not True, text_of(written)
        read = await session.call_tool("file_read", {"path": "a.txt"})
        assert "over HTTP" in text_of(read)
        invalid = await session.call_tool("file_write", {"path": "a.txt"})
        assert invalid.is_error is True
        assert "content" in text_of(invalid)
        with pytest.raises(MCPError) as raised:
            await session.call_tool("nope", {})
        assert raised.value.code == types.INVALID_PARAMS

        async with (
            AsyncToolwireClient(f"127.0.0.1:{grpc_port}") as client,
            client.provide([shout], name="mcp-http-test"),
        ):
            await asyncio.wait_for(changed.wait(), WAIT)
            names = {t.name for t in (await session.list_tools()).tools}
            assert "shout" in names
            result = await session.call_tool("shout", {"text": "hi"})
            assert text_of(result) == "HI"
