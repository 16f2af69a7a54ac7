"""Fixtures for `toolwire mcp` tests: real `toolwire serve` and `toolwire mcp`
processes on free loopback ports, with their state in temporary folders."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Process:
    """A child process whose stderr is collected line by line."""

    process: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def collect(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            with self.changed:
                self.lines.append(raw.decode(errors="replace"))
                self.changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise AssertionError(
                        f"no line matching {pattern!r}; stderr:\n{''.join(self.lines)}"
                    )
                self.changed.wait(min(left, 0.2))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _spawn(args: list[str], env: dict[str, str] | None = None) -> Process:
    process = subprocess.Popen(
        [TOOLWIRE, *args],
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    started = Process(process)
    threading.Thread(target=started.collect, daemon=True).start()
    return started


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


@pytest.fixture(name="toolwire_exe")
def toolwire_exe_fixture() -> str:
    return TOOLWIRE


@pytest.fixture(name="free_port")
def free_port_fixture() -> Callable[[], int]:
    return _free_port


@pytest.fixture(name="serve_flags")
def serve_flags_fixture(tmp_path: Path) -> Callable[[], list[str]]:
    """The flags of an in-process registry on free ports with its own data folder."""

    def flags() -> list[str]:
        data = tmp_path / f"data-{_free_port()}"
        return ["--port", str(_free_port()), "--http-port", "0", "--data-dir", str(data)]

    return flags


@dataclass
class LiveServer:
    target: str
    process: Process
    data_dir: Path


@pytest.fixture(name="live_server")
def live_server_fixture(tmp_path: Path) -> Iterator[LiveServer]:
    """A real `toolwire serve` (built-ins, development mode) for remote mode."""
    port = _free_port()
    data = tmp_path / "server-data"
    started = _spawn(["serve", "--port", str(port), "--http-port", "0", "--data-dir", str(data)])
    target = f"127.0.0.1:{port}"
    try:
        _wait_serving(target, started.process)
        yield LiveServer(target, started, data)
    finally:
        started.stop()


@pytest.fixture(name="spawn_toolwire")
def spawn_toolwire_fixture() -> Iterator[Callable[..., Process]]:
    """`toolwire ARGS...` as a child process, stopped (SIGTERM) when the test ends."""
    started: list[Process] = []

    def spawn(*args: str, env: dict[str, str] | None = None) -> Process:
        started.append(_spawn(list(args), env))
        return started[-1]

    yield spawn
    for p in started:
        p.stop()
