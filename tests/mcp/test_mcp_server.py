"""`toolwire mcp` in process over stdio, driven by the MCP SDK's own client
against a real subprocess: the handshake, tools/list, a successful call, a
failed call (`isError`) and a protocol error for an unknown tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.timeout(120)


@asynccontextmanager
async def stdio_session(toolwire: str, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=toolwire, args=["mcp", *args])
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_stdio_lists_calls_and_reports_errors(
    toolwire_exe: str, serve_flags: Callable[[], list[str]]
) -> None:
    async with stdio_session(toolwire_exe, *serve_flags()) as session:
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.tools is not None
        assert capabilities.tools.list_changed is True

        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert {"file_read", "file_write", "exec"} <= tools.keys()
        file_read = tools["file_read"]
        assert file_read.input_schema["type"] == "object"
        assert "path" in file_read.input_schema["properties"]
        assert file_read.annotations is not None
        assert file_read.annotations.read_only_hint is True
        assert file_read.annotations.destructive_hint is False
        exec_tool = tools["exec"]
        assert exec_tool.annotations is not None
        assert exec_tool.annotations.destructive_hint is True
        assert exec_tool.annotations.read_only_hint is False

        written = await session.call_tool(
            "file_write", {"path": "notes/hello.txt", "content": "hello over MCP"}
        )
        assert written.is_error is not True, text_of(written)
        read = await session.call_tool("file_read", {"path": "notes/hello.txt"})
        assert read.is_error is not True, text_of(read)
        assert "hello over MCP" in text_of(read)

        invalid = await session.call_tool("file_read", {"path": 42})
        assert invalid.is_error is True
        message = text_of(invalid)
        assert message.startswith("invalid_arguments:")
        assert "path" in message

        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool", {})
        assert raised.value.code == types.INVALID_PARAMS
        assert "no_such_tool" in raised.value.message


def test_stdout_carries_only_the_protocol_and_eof_ends_the_server(
    toolwire_exe: str, serve_flags: Callable[[], list[str]]
) -> None:
    """Raw JSON-RPC lines in: every line out is a JSON-RPC message (start-up
    logs, the sandbox's children and all went to stderr), and closing stdin
    ends the session and the whole server."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 7}},
    ]
    process = subprocess.Popen(
        [toolwire_exe, "mcp", *serve_flags()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
    process.stdin.flush()
    replies = [json.loads(process.stdout.readline()) for _ in range(3)]
    process.stdin.close()  # the client goes away: the session and the server end
    assert process.stderr is not None
    rest, stderr = process.stdout.read(), process.stderr.read()
    process.wait(60)
    assert process.returncode == 0, stderr.decode()
    replies += [json.loads(line) for line in rest.decode().splitlines()]
    assert all(r.get("jsonrpc") == "2.0" for r in replies)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert by_id[1]["result"]["capabilities"]["tools"]["listChanged"] is True
    assert any(t["name"] == "file_read" for t in by_id[2]["result"]["tools"])
    assert by_id[3]["error"]["code"] == types.INVALID_PARAMS  # a malformed request
    assert b"toolwire serving" in stderr
