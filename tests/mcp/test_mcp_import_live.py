"""MCP servers imported into a real `toolwire serve` (`[[mcp.servers]]`) and
through the `toolwire import-mcp` bridge, over gRPC with the Python client:
listing, dispatch, validation, code mode through the stubs, and a killed MCP
server coming back."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from toolwire.models import ErrorCode, ModelFormat, SafetyTier
from toolwire_client import ToolwireClient

HERE = Path(__file__).parent
SAMPLE = str(HERE / "sample_mcp_server.py")
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(target: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"toolwire serve exited with {process.returncode}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise TimeoutError(f"toolwire serve did not report SERVING on {target}")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Polls until `condition()` is truthy (generous bound; no timing is asserted)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@dataclass
class Live:
    target: str
    process: subprocess.Popen[bytes]
    folder: Path
    pid_file: Path


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _serve(folder: Path, *extra: str) -> tuple[str, subprocess.Popen[bytes]]:
    port = _free_port()
    process = subprocess.Popen(
        [TOOLWIRE, "serve", "--port", str(port), "--http-port", "0", "--data-dir",
         str(folder / "data"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    target = f"127.0.0.1:{port}"
    try:
        _wait_serving(target, process)
    except Exception:
        _stop(process)
        raise
    return target, process


def _log_of(process: subprocess.Popen[bytes]) -> str:
    _stop(process)
    assert process.stdout is not None
    return process.stdout.read().decode(errors="replace")


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    folder = Path(tempfile.mkdtemp(prefix="toolwire-mcp-import-"))
    pid_file = folder / "sample.pid"
    config = folder / "toolwire.toml"
    config.write_text(
        "[[mcp.servers]]\n"
        'name = "sample"\n'
        f"command = {json.dumps([sys.executable, SAMPLE])}\n"
        f"env = {{ SAMPLE_MCP_PID_FILE = {json.dumps(str(pid_file))}, "
        f"SAMPLE_MCP_EXTRA = {json.dumps(str(folder / 'extra'))} }}\n"
        "timeout_seconds = 20\n"
        "restart_initial_seconds = 0.2\n"
        "restart_max_seconds = 1\n"
        "ping_interval_seconds = 0.3\n",
        encoding="utf-8",
    )
    target, process = _serve(folder, "--config", str(config))
    try:
        yield Live(target, process, folder, pid_file)
    finally:
        _stop(process)


def _names(target: str) -> set[str]:
    with ToolwireClient(target) as client:
        return {t.name for t in client.list()}


def test_imported_tools_are_listed_with_their_mcp_names(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    with ToolwireClient(live.target) as client:
        tools = {t.name: t for t in client.list(group="sample")}
    assert {"sample__add", "sample__echo", "sample__stats", "sample__wipe", "sample__fail",
            "sample__text_shout"} <= set(tools)  # fmt: skip
    assert tools["sample__text_shout"].labels == {"mcp.server": "sample", "mcp.tool": "text.shout"}
    assert tools["sample__add"].safety_tier is SafetyTier.READ_ONLY
    assert tools["sample__wipe"].safety_tier is SafetyTier.PRIVILEGED
    assert tools["sample__fail"].safety_tier is SafetyTier.SIDE_EFFECTING
    assert tools["sample__stats"].output_schema is not None
    assert tools["sample__add"].timeout_seconds == 20


def test_dispatch_reaches_the_mcp_server(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    with ToolwireClient(live.target) as client:
        added = client.dispatch("sample__add", {"a": 2, "b": 3})
        assert added.success, added.error
        assert added.output == "5" and added.structured_output == {"result": 5}
        stats = client.dispatch("sample__stats", {"numbers": [1, 2, 3]})
        assert stats.success and stats.structured_output == {"count": 3, "total": 6.0, "mean": 2.0}
        shout = client.dispatch("sample__text_shout", {"text": "hey"})
        assert shout.success and shout.output == "HEY"
        failed = client.dispatch("sample__fail", {"reason": "no luck"})
        assert not failed.success and failed.error_code is ErrorCode.HANDLER_ERROR
        assert "no luck" in failed.error


def test_invalid_arguments_are_caught_by_toolwire(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    with ToolwireClient(live.target) as client:
        bad = client.dispatch("sample__add", {"a": "two"})
    assert not bad.success and bad.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "missing required field 'b'" in bad.error


def test_imported_tools_have_stubs_and_model_tools(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    with ToolwireClient(live.target) as client:
        stubs = client.generate_stubs(["sample__add"])
        model = client.to_model_tools(ModelFormat.ANTHROPIC, ["sample__add"])
    assert "async function sample__add" in stubs
    [tool] = model.tools
    assert tool["name"] == "sample__add" and tool["input_schema"]["required"] == ["a", "b"]


def test_execute_code_calls_an_mcp_tool_through_the_stubs(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    code = "const r = await sample__add({a: 2, b: 3});\nreturn r;"
    with ToolwireClient(live.target) as client:
        result = client.dispatch("execute_code", {"code": code}, timeout=90)
    assert result.success, result.error
    assert "5" in json.dumps(result.structured_output["value"])


def _pid(live: Live) -> int:
    return int(live.pid_file.read_text(encoding="utf-8"))


def test_a_killed_mcp_server_is_unavailable_then_restarted(live: Live) -> None:
    wait_for(lambda: "sample__add" in _names(live.target), "the sample tools")
    wait_for(lambda: live.pid_file.exists(), "the pid file")
    (live.folder / "extra").write_text("", encoding="utf-8")  # the next start adds a tool
    old = _pid(live)
    os.kill(old, signal.SIGKILL)
    with ToolwireClient(live.target) as client:

        def unavailable() -> Any:
            result = client.dispatch("sample__add", {"a": 1, "b": 1})
            return result if result.error_code is ErrorCode.PROVIDER_UNAVAILABLE else None

        down = wait_for(unavailable, "provider_unavailable after the kill")
        assert "sample" in down.error
        # the tools stay listed while the server is down, or come back at once
        assert "sample__add" in _names(live.target)

        def back() -> Any:
            result = client.dispatch("sample__add", {"a": 40, "b": 2})
            return result if result.success else None

        again = wait_for(back, "the tool to work after the restart")
        assert again.output == "42"
        assert _pid(live) != old
        wait_for(lambda: "sample__extra_tool" in _names(live.target), "the new tool")
        extra = client.dispatch("sample__extra_tool", {"x": 7})
        assert extra.success and extra.output == "extra 7"
    # and a tool that is gone after a restart is removed
    (live.folder / "extra").unlink()
    os.kill(_pid(live), signal.SIGKILL)
    wait_for(lambda: "sample__extra_tool" not in _names(live.target), "the gone tool to go")
    assert "sample__add" in _names(live.target)


def test_the_import_mcp_bridge_serves_the_tools_until_stopped() -> None:
    folder = Path(tempfile.mkdtemp(prefix="toolwire-mcp-bridge-"))
    target, server = _serve(folder, "--no-builtins")
    bridge = subprocess.Popen(
        [TOOLWIRE, "import-mcp", "--target", target, "--name", "bridged",
         "--ping-interval", "0.3", "--restart-initial", "0.2", "--",
         sys.executable, SAMPLE],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(lambda: "bridged__add" in _names(target), "the bridged tools")
        with ToolwireClient(target) as client:
            tools = {t.name: t for t in client.list()}
            assert tools["bridged__text_shout"].labels["mcp.tool"] == "text.shout"
            result = client.dispatch("bridged__add", {"a": 20, "b": 22})
            assert result.success and result.output == "42", result.error
            bad = client.dispatch("bridged__add", {"a": 1})
            assert bad.error_code is ErrorCode.INVALID_ARGUMENTS
        bridge.send_signal(signal.SIGTERM)
        bridge.wait(timeout=60)
        wait_for(lambda: not any(n.startswith("bridged__") for n in _names(target)),
                 "the bridged tools to go")  # fmt: skip
    except BaseException:
        _stop(bridge)
        assert bridge.stdout is not None
        print(bridge.stdout.read().decode(errors="replace"))
        print(_log_of(server))
        raise
    finally:
        _stop(bridge)
        _stop(server)


def test_import_mcp_needs_a_command_or_url() -> None:
    done = subprocess.run(
        [TOOLWIRE, "import-mcp", "--name", "x"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "exactly one of command and url" in done.stderr
