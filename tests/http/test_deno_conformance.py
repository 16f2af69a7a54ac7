"""`deno test clients/deno/conformance_test.ts`: the shared conformance vectors
over gRPC-web from Deno (Connect-ES), against the live HTTP listener.

The registry holds the conformance tools exactly as
`toolwire serve --no-builtins --tools conformance_tools` would: the module's
top-level `Tool` objects, registered in the server's process, so the answers
must equal the expected files (see tests/conformance/README.md). Deno runs
offline, with network access to the listener's host:port only and read access
to tests/conformance only."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from toolwire.capabilities import Capabilities
from toolwire.loading import register_module_tools
from toolwire.models import CallContext, ModelFormat
from toolwire.registry import ToolRegistry
from toolwire.server import ServerConfig, ToolwireServers

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


@pytest.fixture
async def conformance_servers() -> AsyncIterator[ToolwireServers]:
    registry = ToolRegistry()
    register_module_tools(registry, _load_conformance_tools())
    config = ServerConfig(port=0, http_port=0, grace_seconds=0)
    srv = ToolwireServers(registry, config, capabilities=Capabilities())
    await srv.start()
    yield srv
    await srv.stop(0)
    registry.close()


async def test_conformance_vectors_over_grpc_web_from_deno(
    conformance_servers: ToolwireServers, run_deno_test: Any
) -> None:
    servers = conformance_servers
    token, grant = servers.capabilities.issue(
        "conformance",
        context=CallContext(user_id="conformance", session_id="deno"),
        denied=frozenset(),
        budget=len(CASES) * 2,
        ttl_seconds=120,
    )
    run = await run_deno_test(
        CONFORMANCE_TEST,
        servers,
        {
            "TOOLWIRE_URL": servers.http_base_url,
            "TOOLWIRE_TOKEN": token,
            "TOOLWIRE_CONFORMANCE": str(CONFORMANCE),
        },
        allow_read=CONFORMANCE,
        timeout=120,
    )
    assert run.returncode == 0, run.output
    assert run.summary() == (EXPECTED_TESTS, 0), run.output

    # Every dispatch case went through the run's grant (unknown tools included).
    assert [c.name for c in grant.calls] == [c["tool"] for c in CASES]
