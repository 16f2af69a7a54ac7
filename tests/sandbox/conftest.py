"""Fixtures for the Deno sandbox tests: real Deno processes, no registry.

One runtime serves the whole session (its DENO_DIR keeps the compile and check
caches warm); runs are independent of each other by construction. Tool calls
go to a loopback port where nothing listens, or to a tiny HTTP server that
the tests start themselves.
"""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolwire.sandbox import DenoRuntime, Limits, SandboxUnavailableError

FAST = Limits(timeout_seconds=10, heap_mb=64, memory_mb=256)


@pytest.fixture(scope="session")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sandbox")


@pytest.fixture(scope="session")
def runtime(work_root: Path) -> Iterator[DenoRuntime]:
    try:
        runtime = DenoRuntime(limits=FAST, work_root=work_root)
    except SandboxUnavailableError as error:  # Deno is a dependency: its absence is a defect
        pytest.fail(str(error))
    yield runtime
    asyncio.run(runtime.aclose())


@pytest.fixture
def closed_port() -> int:
    """A loopback port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def base_url(closed_port: int) -> str:
    return f"http://127.0.0.1:{closed_port}"


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from loopback"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve() -> tuple[http.server.ThreadingHTTPServer, threading.Thread]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def http_server() -> Iterator[str]:
    """A loopback HTTP server answering "hello from loopback"; yields its URL."""
    server, thread = _serve()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def other_http_server() -> Iterator[int]:
    """A second loopback server (its port), which the sandbox must not reach."""
    server, thread = _serve()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()
    thread.join()
