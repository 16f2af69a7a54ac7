"""Tools served by another process, called by a third, over real sockets."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.models import ErrorCode
from toolwire_client import AsyncToolwireClient, ToolwireClient

HERE = Path(__file__).parent
PROVIDER_TOOLS = {"remote_add", "sleepy", "fails"}


def wait_for_tools(client: ToolwireClient, present: bool, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = {t.name for t in client.list()}
        if names >= PROVIDER_TOOLS if present else not (PROVIDER_TOOLS & names):
            return
        time.sleep(0.05)
    raise TimeoutError(f"provider tools {'never appeared' if present else 'never left'}: {names}")


@pytest.fixture
def provider(live_server: Any, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "provider_app.py"), live_server.target, str(tmp_path)]
    )
    with ToolwireClient(live_server.target) as client:
        wait_for_tools(client, present=True)
    yield process
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_another_client_dispatches_a_provider_tool(
    live_server: Any, provider: subprocess.Popen[bytes]
) -> None:
    with ToolwireClient(live_server.target) as client:
        result = client.dispatch("remote_add", {"a": 20, "b": 22})
        assert result.success and result.output == "42" and result.structured_output == 42
        failed = client.dispatch("fails", {"reason": "disk on fire"})
        assert failed.error_code is ErrorCode.HANDLER_ERROR
        assert "disk on fire" in failed.error
        invalid = client.dispatch("remote_add", {"a": "x", "b": 1})
        assert invalid.error_code is ErrorCode.INVALID_ARGUMENTS
        assert "'a' must be an integer" in invalid.error


def test_killing_the_provider_mid_call_gives_provider_unavailable(
    live_server: Any, provider: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with AsyncToolwireClient(live_server.target) as client:
            call = asyncio.ensure_future(client.dispatch("sleepy", {"tag": "k1"}))
            deadline = time.monotonic() + 20
            while not (tmp_path / "k1").exists():
                assert time.monotonic() < deadline, "the provider never started the call"
                await asyncio.sleep(0.02)
            provider.kill()
            result = await asyncio.wait_for(call, 20)
            assert result.error_code is ErrorCode.PROVIDER_UNAVAILABLE
            assert "disconnected" in result.error
            after = await client.dispatch("add", {"a": 1, "b": 2})
            assert after.output == "3", "the server keeps serving"

    asyncio.run(scenario())
    with ToolwireClient(live_server.target) as client:
        wait_for_tools(client, present=False)
        gone = client.dispatch("remote_add", {"a": 1, "b": 1})
        assert gone.error_code is ErrorCode.NOT_FOUND


def test_a_reconnecting_provider_can_register_its_tools_again(
    live_server: Any, tmp_path: Path
) -> None:
    for _ in range(2):
        process = subprocess.Popen(
            [sys.executable, str(HERE / "provider_app.py"), live_server.target, str(tmp_path)]
        )
        with ToolwireClient(live_server.target) as client:
            wait_for_tools(client, present=True)
            assert client.dispatch("remote_add", {"a": 1, "b": 1}).output == "2"
            process.send_signal(signal.SIGINT)
            process.wait(10)
            wait_for_tools(client, present=False)


def test_200_concurrent_dispatches_over_one_provider_stream(
    live_server: Any, provider: subprocess.Popen[bytes]
) -> None:
    async def scenario() -> list[str]:
        async with AsyncToolwireClient(live_server.target) as client:
            results = await asyncio.gather(
                *(client.dispatch("remote_add", {"a": i, "b": 1000}) for i in range(200))
            )
            assert all(r.success for r in results), [r.error for r in results if not r.success]
            return [r.output for r in results]

    outputs = asyncio.run(scenario())
    assert outputs == [str(i + 1000) for i in range(200)]


def test_a_watcher_sees_a_provider_process_come_and_go(live_server: Any, tmp_path: Path) -> None:
    async def scenario() -> list[tuple[str, str]]:
        async with AsyncToolwireClient(live_server.target) as client:
            stream = client.watch()
            synced = await anext(stream)
            process = subprocess.Popen(  # noqa: ASYNC220 (Popen returns at once)
                [sys.executable, str(HERE / "provider_app.py"), live_server.target, str(tmp_path)]
            )
            seen: list[tuple[str, str]] = []
            try:
                while ("provider_disconnected", "") not in seen:
                    event = await asyncio.wait_for(anext(stream), 20)
                    assert event.version >= synced.version
                    seen.append((event.kind.value, event.name))
                    if len(seen) == len(PROVIDER_TOOLS):
                        process.send_signal(signal.SIGINT)
            finally:
                process.wait(10)
                await stream.aclose()
            return seen

    seen = asyncio.run(scenario())
    assert {n for k, n in seen if k == "tool_added"} == PROVIDER_TOOLS
    assert {n for k, n in seen if k == "tool_removed"} == PROVIDER_TOOLS
    assert seen[-1] == ("provider_disconnected", "")
