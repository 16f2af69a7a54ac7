"""`tools/call` latency through `toolwire mcp` over streamable HTTP, against the
same trivial tool on a plain MCP SDK server, measured side by side.

Both servers are subprocesses on loopback, both serve streamable HTTP with the
SDK's low-level `Server` behind uvicorn; one MCP SDK client session each.
toolwire's side is `toolwire mcp --transport http --tools bench_tools` (the
`echo` tool, dispatched through the registry: validation, policy, limits,
timeout, truncation, audit); the plain side answers `echo` directly. Calls run
one at a time, in alternating blocks, so drift in the machine hits both.

    .venv/bin/python bench/bench_mcp.py [--calls 2000] [--block 100] [--warmup 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
ARGUMENTS = {"text": "hello"}


# --- the plain MCP SDK server (this file, run with --serve-plain) -----------


def serve_plain() -> None:
    import mcp_types as types
    import uvicorn
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    tool = types.Tool(
        name="echo",
        description="Return the text unchanged.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(text=str(text))])

    server: Server[Any] = Server("plain", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(host="127.0.0.1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        print(f"MCP at http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])


# --- the benchmark ---------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _process(args: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """Starts a server and yields its MCP URL (read from its stderr)."""
    process = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    found: list[str] = []
    before: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace")
            match = re.search(r"MCP (?:over streamable HTTP )?at (\S+/mcp)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
            elif not found:
                before.append(line)
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(120)
        if not found:
            sys.stderr.write("".join(before))
            raise RuntimeError(f"{args[0]} did not report its MCP URL")
        yield found[0]
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _block(session: Any, n: int, into: list[float]) -> float:
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        result = await session.call_tool("echo", ARGUMENTS)
        into.append(time.perf_counter() - t0)
        if result.is_error:
            raise RuntimeError(f"echo failed: {result.content}")
    return time.perf_counter() - start


async def _measure(urls: dict[str, str], calls: int, block: int, warmup: int) -> None:
    from contextlib import AsyncExitStack

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with AsyncExitStack() as stack:
        sessions: dict[str, Any] = {}
        for name, url in urls.items():
            read, write = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.list_tools()
            sessions[name] = session
        for session in sessions.values():
            await _block(session, warmup, [])
        latencies: dict[str, list[float]] = {name: [] for name in sessions}
        elapsed = dict.fromkeys(sessions, 0.0)
        done = 0
        while done < calls:
            n = min(block, calls - done)
            for name, session in sessions.items():
                elapsed[name] += await _block(session, n, latencies[name])
            done += n
    _report(latencies, elapsed)


def _report(latencies: dict[str, list[float]], elapsed: dict[str, float]) -> None:
    rows = {}
    for name, values in latencies.items():
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        rows[name] = (statistics.median(ordered), p99, len(values) / elapsed[name])
    print(f"tools/call over streamable HTTP, {len(next(iter(latencies.values())))} calls each")
    print(f"{'server':<28} {'median ms':>10} {'p99 ms':>10} {'calls/s':>10}")
    for name, (median, p99, rate) in rows.items():
        print(f"{name:<28} {median * 1e3:>10.3f} {p99 * 1e3:>10.3f} {rate:>10.0f}")
    toolwire, plain = rows["toolwire mcp (in process)"], rows["plain MCP SDK server"]
    print(
        f"ratio toolwire/plain: median {toolwire[0] / plain[0]:.2f}x, "
        f"p99 {toolwire[1] / plain[1]:.2f}x, calls/s {toolwire[2] / plain[2]:.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per server")
    parser.add_argument("--block", type=int, default=100, help="calls per alternating block")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--serve-plain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_plain:
        serve_plain()
        return 0
    data = tempfile.mkdtemp(prefix="toolwire-bench-mcp-")
    toolwire_args = [
        TOOLWIRE, "mcp", "--transport", "http", "--mcp-port", "0",
        "--port", str(_free_port()), "--http-port", "0", "--data-dir", data,
        "--tools", "bench_tools",
    ]  # fmt: skip
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    with (
        _process(toolwire_args, env) as toolwire_url,
        _process([sys.executable, __file__, "--serve-plain"]) as plain_url,
    ):
        urls = {"toolwire mcp (in process)": toolwire_url, "plain MCP SDK server": plain_url}
        asyncio.run(_measure(urls, args.calls, args.block, args.warmup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
