"""A live `toolwire serve` with the conformance tools, for the Node agent.

A small copy of the server helper in tests/conformance/conftest.py (conftest
files are not importable): the server runs `--no-builtins --tools
conformance_tools` with tests/conformance on its PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO / "tests" / "conformance"
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(target: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(
                    f"toolwire serve exited with {process.returncode}:\n"
                    + log.read_text(errors="replace")
                )
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise TimeoutError(f"toolwire serve did not report SERVING on {target}")


@pytest.fixture(scope="module")
def conformance_target() -> Iterator[str]:
    """host:port of a server whose only tools are the conformance tools."""
    port = _free_port()
    data = Path(tempfile.mkdtemp(prefix="toolwire-node-"))
    log = data / "serve.log"
    args = [TOOLWIRE, "serve", "--port", str(port), "--http-port", "0", "--grace", "1"]
    args += ["--no-builtins", "--tools", "conformance_tools", "--data-dir", str(data)]
    args += ["--config", str(CONFORMANCE / "policy.toml")]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, env={**os.environ, "PYTHONPATH": str(CONFORMANCE)}, stdout=out, stderr=out
        )
    target = f"127.0.0.1:{port}"
    try:
        _wait_serving(target, process, log)
        yield target
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(data, ignore_errors=True)
