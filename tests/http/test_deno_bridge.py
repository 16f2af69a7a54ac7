"""`deno test clients/deno/bridge_test.ts` against the live HTTP listener:
Connect-ES's gRPC-web transport, the bridge, run tokens, typed errors.

Deno runs offline (npm packages from the root node_modules, nothing remote)
with network access to the listener's host:port only."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolwire.capabilities import RunGrant
from toolwire.server import ToolwireServers

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_TEST = "clients/deno/bridge_test.ts"
EXPECTED_TESTS = 7

Issue = Callable[..., tuple[str, RunGrant]]


async def test_deno_bridge_against_the_live_listener(
    servers: ToolwireServers, issue: Issue, run_deno_test: Any
) -> None:
    token, grant = issue()
    run = await run_deno_test(
        BRIDGE_TEST,
        servers,
        {
            "TOOLWIRE_URL": servers.http_base_url,
            "TOOLWIRE_TOKEN": token,
            "TOOLWIRE_BAD_TOKEN": secrets.token_urlsafe(32),
        },
    )
    assert run.returncode == 0, run.output
    assert run.summary() == (EXPECTED_TESTS, 0), run.output

    # The calls went through the run's grant, which recorded each of them.
    names = [c.name for c in grant.calls]
    assert names.count("add") == 3  # success, through __callTool__, invalid arguments
    assert {"text_stats", "explode", "no_such_tool", "execute_code"} <= set(names)
    # Neither the refused execute_code nor the unknown tool spent budget.
    assert grant.used == len(names) - 2
