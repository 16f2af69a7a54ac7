"""`deno test clients/deno/watch_test.ts`: List paging and the server-streaming
Watch over gRPC-web from Deno (Connect-ES), against the live HTTP listener.

The Deno test prints a marker line once its watch is SYNCED; this side then
changes the registry (a tool the grant refuses and one it permits, each added
and removed) and the Deno test checks that only the permitted tool's events
arrive, with increasing registry versions. Every wait is bounded."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

import deno
import pytest
from toolwire.capabilities import RunGrant
from toolwire.models import CallContext, ToolDefinition
from toolwire.server import ToolwireServers
from toolwire.tools import Tool, ToolContext

ROOT = Path(__file__).resolve().parents[2]
WATCH_TEST = "clients/deno/watch_test.ts"
WATCH_MARKER = "TOOLWIRE_WATCH_SYNCED"
EXPECTED_TESTS = 2
WATCHED = "watched_tool"
HIDDEN = "hidden_tool"

Issue = Callable[..., tuple[str, RunGrant]]


async def _noop(arguments: object, context: ToolContext) -> str:
    return "ok"


def _tool(name: str) -> Tool:
    return Tool.of(
        ToolDefinition(name=name, input_schema={"type": "object", "properties": {}}), _noop
    )


async def test_deno_watch_and_paging(servers: ToolwireServers, tmp_path: Path) -> None:
    if not (ROOT / "node_modules" / "@connectrpc" / "connect-web").is_dir():
        pytest.fail("node_modules is missing: run `npm ci` (make install) first")
    denied = frozenset({"execute_code", HIDDEN})
    token, _ = servers.capabilities.issue(
        "watch", context=CallContext(user_id="alice", session_id="s1"), denied=denied
    )
    visible = sorted(d.name for d in servers.registry.list() if d.name not in denied)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DENO_DIR": str(tmp_path / "deno-dir"),
        "DENO_NO_UPDATE_CHECK": "1",
        "NO_COLOR": "1",
        "TOOLWIRE_URL": servers.http_base_url,
        "TOOLWIRE_TOKEN": token,
        "TOOLWIRE_VISIBLE": ",".join(visible),
        "TOOLWIRE_WATCH_TOOL": WATCHED,
    }
    process = await asyncio.create_subprocess_exec(
        deno.find_deno_bin(),
        "test",
        "--no-remote",
        "--cached-only",
        "--no-prompt",
        f"--allow-net={servers.http.host}:{servers.http.port}",
        "--allow-env=TOOLWIRE_URL,TOOLWIRE_TOKEN,TOOLWIRE_VISIBLE,TOOLWIRE_WATCH_TOOL",
        WATCH_TEST,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    lines: list[str] = []
    changed = False

    async def read_and_change() -> None:
        nonlocal changed
        assert process.stdout is not None
        async for raw in process.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            if line.strip() == WATCH_MARKER and not changed:
                changed = True
                registry = servers.registry
                registry.register(_tool(HIDDEN))
                registry.register(_tool(WATCHED))
                registry.unregister(HIDDEN)
                registry.unregister(WATCHED)

    try:
        await asyncio.wait_for(read_and_change(), timeout=60)
        await asyncio.wait_for(process.wait(), timeout=10)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError("deno test did not finish:\n" + "".join(lines)) from None
    output = "".join(lines)
    assert changed, output
    assert process.returncode == 0, output
    summary = re.search(r"ok \| (\d+) passed \| (\d+) failed", output)
    assert summary, output
    assert (int(summary[1]), int(summary[2])) == (EXPECTED_TESTS, 0), output
    # The registry is back as it was.
    assert WATCHED not in {d.name for d in servers.registry.list()}
