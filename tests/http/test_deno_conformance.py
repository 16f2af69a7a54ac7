"""`deno test clients/deno/conformance_test.ts`: the shared conformance vectors
over gRPC-web from Deno (Connect-ES), against the live HTTP listener.

The registry holds the conformance tools exactly as
`toolwire serve --no-builtins --tools conformance_tools` would: the module's
top-level `Tool` objects, registered in the server's process, so the answers
must equal the expected files (see tests/conformance/README.md). Deno runs
offline, with network access to the listener's host:port only and read access
to tests/conformance only."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import deno
import pytest
from toolwire.capabilities import Capabilities
from toolwire.declare import DeclaredTool
from toolwire.models import CallContext, ModelFormat
from toolwire.registry import ToolRegistry
from toolwire.server import ServerConfig, ToolwireServers
from toolwire.tools import Tool

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "tests" / "conformance"
CONFORMANCE_TEST = "clients/deno/conformance_test.ts"
CASES = json.loads((CONFORMANCE / "dispatch_cases.json").read_text(encoding="utf-8"))["cases"]
# List, one per model format, stubs, one per dispatch case.
EXPECTED_TESTS = 1 + len(ModelFormat) + 1 + len(CASES)


def _load_conformance_tools() -> ModuleType:
    """conformance_tools.py by path, as tests/conformance/conftest.py loads it
    (no test edits sys.path)."""
    spec = importlib.util.spec_from_file_location(
        "conformance_tools", CONFORMANCE / "conformance_tools.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _register_module(registry: ToolRegistry, module: ModuleType) -> None:
    """What `toolwire.loading.load_tool_module` does once the module is imported:
    register every `@tool` function and `Tool` at its top level."""
    found = [
        value.tool if isinstance(value, DeclaredTool) else value
        for value in vars(module).values()
        if isinstance(value, DeclaredTool | Tool)
    ]
    assert found, "conformance_tools.py defines no tools"
    for tool in found:
        registry.register(tool)


@pytest.fixture
async def conformance_servers() -> AsyncIterator[ToolwireServers]:
    registry = ToolRegistry()
    _register_module(registry, _load_conformance_tools())
    config = ServerConfig(port=0, http_port=0, grace_seconds=0)
    srv = ToolwireServers(registry, config, capabilities=Capabilities())
    await srv.start()
    yield srv
    await srv.stop(0)
    registry.close()


async def test_conformance_vectors_over_grpc_web_from_deno(
    conformance_servers: ToolwireServers, tmp_path: Path
) -> None:
    if not (ROOT / "node_modules" / "@connectrpc" / "connect-web").is_dir():
        pytest.fail("node_modules is missing: run `npm ci` (make install) first")
    servers = conformance_servers
    token, grant = servers.capabilities.issue(
        "conformance",
        context=CallContext(user_id="conformance", session_id="deno"),
        denied=frozenset(),
        budget=len(CASES) * 2,
        ttl_seconds=120,
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DENO_DIR": str(tmp_path / "deno-dir"),
        "DENO_NO_UPDATE_CHECK": "1",
        "NO_COLOR": "1",
        "TOOLWIRE_URL": servers.http_base_url,
        "TOOLWIRE_TOKEN": token,
        "TOOLWIRE_CONFORMANCE": str(CONFORMANCE),
    }
    process = await asyncio.create_subprocess_exec(
        deno.find_deno_bin(),
        "test",
        "--no-remote",
        "--cached-only",
        "--no-prompt",
        f"--allow-net={servers.http.host}:{servers.http.port}",
        f"--allow-read={CONFORMANCE}",
        "--allow-env=TOOLWIRE_URL,TOOLWIRE_TOKEN,TOOLWIRE_CONFORMANCE",
        CONFORMANCE_TEST,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        raw, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    output = raw.decode(errors="replace")
    assert process.returncode == 0, output
    summary = re.search(r"ok \| (\d+) passed \| (\d+) failed", output)
    assert summary, output
    assert (int(summary[1]), int(summary[2])) == (EXPECTED_TESTS, 0), output

    # Every dispatch case went through the run's grant (unknown tools included).
    assert [c.name for c in grant.calls] == [c["tool"] for c in CASES]
