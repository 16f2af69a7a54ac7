"""Both listeners on free loopback ports around one registry with a few tools,
and a way to issue run tokens from the servers' own Capabilities."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import deno
import pytest
from toolwire.capabilities import Capabilities, RunGrant
from toolwire.models import CallContext, SafetyTier, ToolDefinition
from toolwire.registry import ToolRegistry
from toolwire.server import ServerConfig, ToolwireServers
from toolwire.tools import Tool, ToolContext

MAX_MESSAGE_BYTES = 64 * 1024
ALLOWED_ORIGIN = "https://app.example"

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
TEXT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def _add(arguments: Any, context: ToolContext) -> int:
    return int(arguments["a"]) + int(arguments["b"])


async def _stats(arguments: Any, context: ToolContext) -> dict[str, Any]:
    text = arguments["text"]
    return {"length": len(text), "words": text.split(), "upper": text.upper()}


async def _explode(arguments: Any, context: ToolContext) -> str:
    raise RuntimeError(f"cannot handle {arguments['text']!r}")


async def _whoami(arguments: Any, context: ToolContext) -> dict[str, Any]:
    """Who the call acts for, and how long it may take (from its deadline)."""
    return {
        "user_id": context.call.user_id,
        "session_id": context.call.session_id,
        "seconds_left": context.deadline - time.monotonic(),
    }


async def _slow(arguments: Any, context: ToolContext) -> str:
    await asyncio.sleep(0.3)
    return "done"


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for definition, handler in [
        (ToolDefinition(name="add", group="math", input_schema=ADD_SCHEMA), _add),
        (ToolDefinition(name="text_stats", group="text", input_schema=TEXT_SCHEMA), _stats),
        (ToolDefinition(name="explode", group="text", input_schema=TEXT_SCHEMA), _explode),
        (
            ToolDefinition(
                name="whoami", safety_tier=SafetyTier.READ_ONLY, input_schema=EMPTY_SCHEMA
            ),
            _whoami,
        ),
        (ToolDefinition(name="slow", input_schema=EMPTY_SCHEMA), _slow),
        (ToolDefinition(name="execute_code", input_schema=TEXT_SCHEMA), _stats),
    ]:
        registry.register(Tool.of(definition, handler))
    return registry


class Clock:
    """A monotonic clock the tests can move forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def servers(clock: Clock) -> AsyncIterator[ToolwireServers]:
    registry = make_registry()
    config = ServerConfig(
        port=0,
        http_port=0,
        max_message_bytes=MAX_MESSAGE_BYTES,
        grace_seconds=0,
        cors_origins=(ALLOWED_ORIGIN,),
    )
    srv = ToolwireServers(registry, config, capabilities=Capabilities(clock=clock))
    await srv.start()
    yield srv
    await srv.stop(0)
    registry.close()


Issue = Callable[..., tuple[str, RunGrant]]


@pytest.fixture
def issue(servers: ToolwireServers) -> Issue:
    """Issue a run token on the servers' Capabilities (defaults as code mode's)."""

    def _issue(**kwargs: Any) -> tuple[str, RunGrant]:
        kwargs.setdefault("context", CallContext(user_id="alice", session_id="s1"))
        return servers.capabilities.issue("run-1", **kwargs)

    return _issue


@pytest.fixture
def base_url(servers: ToolwireServers) -> str:
    return servers.http_base_url


@pytest.fixture
def max_message_bytes(servers: ToolwireServers) -> int:
    return servers.config.max_message_bytes


@pytest.fixture
def allowed_origin() -> str:
    return ALLOWED_ORIGIN


ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class DenoTestRun:
    returncode: int
    output: str

    def summary(self) -> tuple[int, int]:
        """(passed, failed) from `deno test`'s closing line."""
        found = re.search(r"ok \| (\d+) passed \| (\d+) failed", self.output)
        assert found, self.output
        return int(found[1]), int(found[2])


RunDenoTest = Callable[..., Awaitable[DenoTestRun]]


@pytest.fixture(scope="session")
def deno_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deno-dir")


@pytest.fixture
def run_deno_test(deno_dir: Path) -> RunDenoTest:
    """Runs a `deno test` file offline against the servers' HTTP listener, with
    network access to that listener only and the given variables readable."""

    async def run(
        test_file: str,
        servers: ToolwireServers,
        variables: dict[str, str],
        *,
        allow_read: Path | None = None,
        timeout: float = 150,
    ) -> DenoTestRun:
        if not (ROOT / "node_modules" / "@connectrpc" / "connect-web").is_dir():
            pytest.fail("node_modules is missing: run `npm ci` (make install) first")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", str(deno_dir)),
            "DENO_DIR": str(deno_dir),
            "DENO_NO_UPDATE_CHECK": "1",
            "NO_COLOR": "1",
            **variables,
        }
        reads = [f"--allow-read={allow_read}"] if allow_read else []
        process = await asyncio.create_subprocess_exec(
            deno.find_deno_bin(),
            "test",
            "--no-remote",
            "--cached-only",
            "--no-prompt",
            f"--allow-net={servers.http.host}:{servers.http.port}",
            *reads,
            f"--allow-env={','.join(variables)}",
            test_file,
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            raw, _ = await asyncio.wait_for(process.communicate(), timeout=timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        return DenoTestRun(process.returncode or 0, raw.decode(errors="replace"))

    return run
