"""The conformance vectors for the Python runners, and a live server that serves them.

The vectors are data (see README.md in this folder); this file only reads
them, checks an outcome against them, and starts
`toolwire serve --no-builtins --tools conformance_tools` for the gRPC runner.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from toolwire.models import ModelFormat, ToolResult

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
UPDATE = os.environ.get("TOOLWIRE_UPDATE_GOLDEN") == "1"


def _load_tools_module() -> ModuleType:
    """conformance_tools.py by path: the server imports it by name from
    PYTHONPATH, and no test edits sys.path."""
    spec = importlib.util.spec_from_file_location(
        "conformance_tools", HERE / "conformance_tools.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOLS = _load_tools_module()


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def model_tools_path(fmt: ModelFormat) -> Path:
    return EXPECTED / "model_tools" / f"{fmt.value}.json"


STUBS_PATH = EXPECTED / "stubs.ts"
DISPATCH_CASES: list[dict[str, Any]] = read_json(HERE / "dispatch_cases.json")["cases"]


def ordered(value: Any) -> Any:
    """JSON data with object key order made visible to `==`."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def outcome(result: ToolResult) -> dict[str, Any]:
    """What a dispatch case compares, in the fixture's vocabulary."""
    if result.success:
        return {"success": True, "structured_output": result.structured_output}
    assert result.error_code is not None
    return {"success": False, "error_code": result.error_code.value, "error": result.error}


def check_dispatch(case: dict[str, Any], result: ToolResult) -> None:
    expect = case["expect"]
    got = outcome(result)
    assert got["success"] is expect["success"], (case["id"], got)
    if expect["success"]:
        assert got["structured_output"] == expect["structured_output"], (case["id"], got)
    else:
        assert got["error_code"] == expect["error_code"], (case["id"], got)
        assert expect["error_contains"] in got["error"], (case["id"], got)


class Vectors:
    """What the runners need from this file, as one fixture (conftest is not
    importable under --import-mode=importlib)."""

    tools = TOOLS
    update = UPDATE
    stubs_path = STUBS_PATH
    dispatch_cases = DISPATCH_CASES
    model_tools_path = staticmethod(model_tools_path)
    read_json = staticmethod(read_json)
    ordered = staticmethod(ordered)
    outcome = staticmethod(outcome)
    check_dispatch = staticmethod(check_dispatch)

    def expected_model_tools(self, fmt: ModelFormat) -> Any:
        return read_json(model_tools_path(fmt))

    def expected_stubs(self) -> str:
        return STUBS_PATH.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def vectors() -> Vectors:
    return Vectors()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dispatch_case" in metafunc.fixturenames:
        metafunc.parametrize("dispatch_case", DISPATCH_CASES, ids=[c["id"] for c in DISPATCH_CASES])
    if "model_format" in metafunc.fixturenames:
        metafunc.parametrize("model_format", list(ModelFormat), ids=[f.value for f in ModelFormat])


# --- a live server -----------------------------------------------------------


@dataclass
class LiveServer:
    target: str
    process: subprocess.Popen[bytes]
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(server: LiveServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(
                    f"toolwire serve exited with {server.process.returncode}:\n"
                    + server.log.read_text(errors="replace")
                )
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise TimeoutError(f"toolwire serve did not report SERVING on {server.target}")


def start_server(*tool_modules: str) -> LiveServer:
    """`toolwire serve --no-builtins` with these modules from this folder."""
    port = _free_port()
    data = Path(tempfile.mkdtemp(prefix="toolwire-conformance-"))
    log = data / "serve.log"
    args = [TOOLWIRE, "serve", "--port", str(port), "--http-port", "0", "--grace", "1"]
    args.append("--no-builtins")
    for module in tool_modules:
        args += ["--tools", module]
    args += ["--data-dir", str(data), "--config", str(HERE / "policy.toml")]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, env={**os.environ, "PYTHONPATH": str(HERE)}, stdout=out, stderr=out
        )
    server = LiveServer(f"127.0.0.1:{port}", process, log)
    try:
        _wait_serving(server)
    except Exception:
        process.kill()
        process.wait()
        shutil.rmtree(data, ignore_errors=True)
        raise
    return server


def stop_server(server: LiveServer) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    shutil.rmtree(server.log.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def conformance_server() -> Iterator[LiveServer]:
    """A server whose only tools are the conformance tools, registered in-process."""
    server = start_server("conformance_tools")
    yield server
    stop_server(server)


@dataclass
class ProvidedServer:
    target: str
    provider: subprocess.Popen[bytes]


def _wait_provided(server: LiveServer, provider: subprocess.Popen[bytes], log: Path) -> None:
    from toolwire_client import ToolwireClient

    wanted = {d.name for d in TOOLS.definitions()}
    deadline = time.monotonic() + 30
    with ToolwireClient(server.target, timeout=5) as client:
        while time.monotonic() < deadline:
            if provider.poll() is not None:
                raise RuntimeError(
                    f"the conformance provider exited with {provider.returncode}:\n"
                    + log.read_text(errors="replace")
                )
            if wanted <= {d.name for d in client.list()}:
                return
            time.sleep(0.1)
    raise TimeoutError("the conformance provider did not register its tools")


@pytest.fixture(scope="module")
def provided_server() -> Iterator[ProvidedServer]:
    """A server without tools, and a provider process that registers the
    conformance tools over the `Provide` stream: their definitions cross the wire."""
    server = start_server()
    log = server.log.with_name("provider.log")
    with log.open("wb") as out:
        provider = subprocess.Popen(
            [sys.executable, str(HERE / "conformance_tools.py"), server.target],
            stdout=out,
            stderr=out,
        )
    try:
        _wait_provided(server, provider, log)
        yield ProvidedServer(server.target, provider)
    finally:
        provider.send_signal(signal.SIGINT)
        try:
            provider.wait(10)
        except subprocess.TimeoutExpired:
            provider.kill()
            provider.wait()
        stop_server(server)
