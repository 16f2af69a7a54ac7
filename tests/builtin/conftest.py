"""A scripted HTTP server on 127.0.0.1 for the web and http tool tests.

Routes get the request handler, which answers with `handler.reply(...)`.
"""

from __future__ import annotations

import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


Route = Callable[[BaseHTTPRequestHandler], None]


class Site:
    """A real HTTP server on a free loopback port whose paths run `routes`.

    Handlers that wait (slow responses) wait on `release`, which `close`
    sets, so the suite never waits for them.
    """

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self.release = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def reply(
                self,
                status: int,
                body: bytes = b"",
                content_type: str | None = "text/html; charset=utf-8",
                headers: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                if content_type is not None:
                    self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def handle_one(self) -> None:
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                site.seen.append(
                    Seen(
                        self.command,
                        path,
                        urllib.parse.parse_qs(query),
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                route = site.routes.get(path)
                try:
                    if route is None:
                        self.reply(404, b"no such page", "text/plain")
                    else:
                        route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


@pytest.fixture
def make_site() -> Iterator[Callable[..., Site]]:
    """Sites (plain or TLS) closed when the test ends."""
    made: list[Site] = []

    def make(tls: ssl.SSLContext | None = None) -> Site:
        made.append(Site(tls))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    return make_site()
