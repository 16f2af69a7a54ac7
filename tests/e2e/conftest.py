"""A real `toolwire serve` process on a free loopback port, shared by a module."""

from __future__ import annotations

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

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

HERE = Path(__file__).parent
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_serving(target: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
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


@dataclass
class LiveServer:
    target: str
    process: subprocess.Popen[bytes]
    data_dir: Path


def start_server(*extra: str, data_dir: Path | None = None) -> LiveServer:
    """`toolwire serve` with the sample tools and the built-ins, its state in
    `data_dir` (a fresh temporary folder unless given)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    data = data_dir or Path(tempfile.mkdtemp(prefix="toolwire-e2e-"))
    process = subprocess.Popen(
        [
            TOOLWIRE,
            "serve",
            "--port",
            str(port),
            "--http-port",
            "0",  # servers run side by side; none may hold the default HTTP port
            "--tools",
            "sample_tools",
            "--data-dir",
            str(data),
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    target = f"127.0.0.1:{port}"
    try:
        wait_serving(target, process)
    except Exception:
        process.kill()
        raise
    return LiveServer(target, process, data)


def stop_server(server: LiveServer) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@pytest.fixture(name="free_port")
def free_port_fixture() -> Callable[[], int]:
    return free_port


def _starter() -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []

    def start(*extra: str, data_dir: Path | None = None) -> LiveServer:
        started.append(start_server(*extra, data_dir=data_dir))
        return started[-1]

    yield start
    for server in started:
        stop_server(server)


@pytest.fixture(name="start_server")
def start_server_fixture() -> Iterator[Callable[..., LiveServer]]:
    """Servers stopped when the test ends."""
    yield from _starter()


@pytest.fixture(scope="module")
def start_module_server() -> Iterator[Callable[..., LiveServer]]:
    """Servers shared by a module's tests, stopped when the module ends."""
    yield from _starter()


@pytest.fixture(name="toolwire_bin")
def toolwire_bin_fixture() -> str:
    return TOOLWIRE


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    server = start_server()
    yield server
    stop_server(server)
