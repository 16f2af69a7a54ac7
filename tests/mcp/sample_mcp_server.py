"""A small MCP server, written with the `mcp` SDK, whose tools the import tests import.

Runs over stdio, or over streamable HTTP with `--http PORT` (at /mcp). Environment:
- SAMPLE_MCP_PID_FILE: write this process's pid there at start (for tests that kill it);
- SAMPLE_MCP_EXTRA: when the named file exists at start, also serve `extra`
  (for tests that watch the tool list change across a restart).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("sample")


class Stats(BaseModel):
    count: int
    total: float
    mean: float


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def stats(numbers: list[float]) -> Stats:
    """Count, total and mean of some numbers."""
    total = sum(numbers)
    return Stats(count=len(numbers), total=total, mean=total / len(numbers) if numbers else 0.0)


@server.tool(annotations=ToolAnnotations(destructive_hint=True), structured_output=False)
def wipe(path: str) -> str:
    """Pretend to delete everything under a path."""
    return f"wiped {path}"


@server.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(reason)


@server.tool(name="text.shout", structured_output=False)
def shout(text: str) -> str:
    """Upper-case the text (a name with a character toolwire names cannot have)."""
    return text.upper()


if (extra := os.environ.get("SAMPLE_MCP_EXTRA")) and Path(extra).exists():

    @server.tool(structured_output=False)
    def extra_tool(x: int) -> str:
        """Only there when the extra file existed at start."""
        return f"extra {x}"


if __name__ == "__main__":
    if pid_file := os.environ.get("SAMPLE_MCP_PID_FILE"):
        Path(pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # streamable HTTP on this port
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
