"""`toolwire serve` starts both listeners in one process and stops both on SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
SERVICE = "/toolwire.v1.RegistryService"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_grpc_serving(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            assert process.poll() is None, "toolwire serve exited early"
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise TimeoutError("toolwire serve did not report SERVING")


def test_serve_runs_both_listeners_and_stops_both_on_sigterm(tmp_path: Path) -> None:
    grpc_port, http_port = free_port(), free_port()
    process = subprocess.Popen(
        [
            TOOLWIRE, "serve", "--no-builtins", "--data-dir", str(tmp_path),
            "--port", str(grpc_port), "--http-port", str(http_port),
            "--cors-origin", "https://app.example", "--grace", "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_grpc_serving(grpc_port, process)
        base = f"http://127.0.0.1:{http_port}"
        # The HTTP listener is up and refuses callers without a run token.
        refused = httpx.post(f"{base}{SERVICE}/List", json={}, timeout=5)
        assert refused.status_code == 401
        assert refused.json()["code"] == "unauthenticated"
        preflight = httpx.options(
            f"{base}{SERVICE}/List",
            headers={"origin": "https://app.example", "access-control-request-method": "POST"},
            timeout=5,
        )
        assert preflight.status_code == 204
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = process.stdout.read().decode() if process.stdout else ""
    assert f"{base} (gRPC-web, Connect)" in output
    assert "shutting down" in output
    with socket.socket() as s:  # both ports are free again
        s.bind(("127.0.0.1", http_port))
    with socket.socket() as s:
        s.bind(("127.0.0.1", grpc_port))


def test_http_port_in_use_is_a_clear_startup_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http_port = taken.getsockname()[1]
        result = subprocess.run(
            [
                TOOLWIRE, "serve", "--no-builtins", "--data-dir", str(tmp_path),
                "--port", str(free_port()), "--http-port", str(http_port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"could not listen on 127.0.0.1:{http_port}" in result.stderr
