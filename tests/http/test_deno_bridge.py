"""`deno test clients/deno/bridge_test.ts` against the live HTTP listener:
Connect-ES's gRPC-web transport, the bridge, run tokens, typed errors.

Deno runs offline (npm packages from the root node_modules, nothing remote)
with network access to the listener's host:port only."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

import deno
import pytest
from toolwire.capabilities import RunGrant
from toolwire.server import ToolwireServers

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_TEST = "clients/deno/bridge_test.ts"
EXPECTED_TESTS = 7

Issue = Callable[..., tuple[str, RunGrant]]


@pytest.fixture(scope="session")
def deno_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deno-dir")


async def test_deno_bridge_against_the_live_listener(
    servers: ToolwireServers, issue: Issue, deno_dir: Path
) -> None:
    if not (ROOT / "node_modules" / "@connectrpc" / "connect-web").is_dir():
        pytest.fail("node_modules is missing: run `npm ci` (make install) first")
    token, grant = issue()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(deno_dir)),
        "DENO_DIR": str(deno_dir),
        "DENO_NO_UPDATE_CHECK": "1",
        "NO_COLOR": "1",
        "TOOLWIRE_URL": servers.http_base_url,
        "TOOLWIRE_TOKEN": token,
        "TOOLWIRE_BAD_TOKEN": secrets.token_urlsafe(32),
    }
    process = await asyncio.create_subprocess_exec(
        deno.find_deno_bin(),
        "test",
        "--no-remote",
        "--cached-only",
        "--no-prompt",
        f"--allow-net={servers.http.host}:{servers.http.port}",
        "--allow-env=TOOLWIRE_URL,TOOLWIRE_TOKEN,TOOLWIRE_BAD_TOKEN",
        BRIDGE_TEST,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        raw, _ = await asyncio.wait_for(process.communicate(), timeout=150)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    output = raw.decode(errors="replace")
    assert process.returncode == 0, output
    summary = re.search(r"ok \| (\d+) passed \| (\d+) failed", output)
    assert summary, output
    assert (int(summary[1]), int(summary[2])) == (EXPECTED_TESTS, 0), output

    # The calls went through the run's grant, which recorded each of them.
    names = [c.name for c in grant.calls]
    assert names.count("add") == 3  # success, through __callTool__, invalid arguments
    assert {"text_stats", "explode", "no_such_tool", "execute_code"} <= set(names)
    assert grant.used == len(names) - 1  # the refused execute_code spent no budget
