"""The toolwire server: one registry, served on two listeners.

- gRPC (grpc.aio, HTTP/2, TLS when configured) with health and reflection:
  agents, providers and operators;
- HTTP (uvicorn, gRPC-web and Connect): code running in the sandbox (with its
  run token) and browsers.

Both authenticate with the one `Authenticator`. A server without tokens is a
development server: it serves anonymous callers only on loopback, says so
loudly, and refuses to start on any other address.

This is the entry point that wires transports to the core; nothing else
imports a transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import uvicorn
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .auth import LOCAL, Authenticator
from .capabilities import Capabilities
from .errors import ToolwireError
from .providers import ProviderHub
from .registry import ToolRegistry
from .transport.connect_app import create_app
from .transport.grpc_servicer import RegistryServicer
from .transport.handlers import RegistryHandlers
from .v1 import registry_service_pb2, registry_service_pb2_grpc

log = logging.getLogger("toolwire")

DEVELOPMENT_WARNING = """
  ********************************************************************
  *  DEVELOPMENT MODE: no tokens are configured.                      *
  *  Anyone who can reach this machine's loopback address can call,   *
  *  register and approve tools as the 'local' principal (all         *
  *  scopes). Configure auth.tokens (--config) or TOOLWIRE_TOKENS     *
  *  before serving anyone else.                                      *
  ********************************************************************"""

SERVICE_NAME = registry_service_pb2.DESCRIPTOR.services_by_name["RegistryService"].full_name


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    max_message_bytes: int = 4 * 1024 * 1024
    """The largest request either listener accepts (and the largest gRPC reply)."""
    grace_seconds: float = 5.0
    tool_modules: list[str] = field(default_factory=list)
    http_host: str | None = None
    """The HTTP (gRPC-web/Connect) listener's address; None: the same as `host`."""
    http_port: int = 50052
    """0: any free port (`HttpServer.port` tells which)."""
    cors_origins: tuple[str, ...] = ()
    """Browser origins allowed to call the HTTP listener ("*": any); none: CORS off."""
    tls_cert_file: Path | None = None
    """PEM certificate chain of the gRPC listener; with `tls_key_file`, it serves TLS only."""
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    """PEM roots that client certificates must chain to; set, clients must present one."""

    @property
    def http_bind_host(self) -> str:
        return self.host if self.http_host is None else self.http_host


class InsecureBindError(ToolwireError):
    """No tokens, and an address other than loopback."""


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def development_authenticator(
    config: ServerConfig, capabilities: Capabilities | None = None
) -> Authenticator:
    """The authenticator of a server without tokens: anonymous callers are the
    local principal, on loopback only."""
    hosts = {config.host, config.http_bind_host}
    exposed = sorted(h for h in hosts if not is_loopback(h))
    if exposed:
        raise InsecureBindError(
            f"no tokens are configured, so toolwire serves only on loopback; it will not "
            f"listen on {', '.join(exposed)} unauthenticated. Configure tokens (auth.tokens in "
            "the config file, or TOOLWIRE_TOKENS) or bind to 127.0.0.1"
        )
    return Authenticator(capabilities=capabilities, anonymous=LOCAL)


def _read_pem(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise OSError(f"cannot read the TLS {what} {path}: {e.strerror or e}") from None


def server_credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    """TLS credentials when a certificate and key are configured (both or neither)."""
    cert, key, client_ca = config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file
    if cert is None and key is None:
        if client_ca is not None:
            raise OSError("a TLS client CA needs a server certificate and key too")
        return None
    if cert is None or key is None:
        raise OSError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
    roots = None if client_ca is None else _read_pem(client_ca, "client CA")
    return grpc.ssl_server_credentials(
        [(_read_pem(key, "key"), _read_pem(cert, "certificate"))],
        root_certificates=roots,
        require_client_auth=roots is not None,
    )


class GrpcServer:
    """A started grpc.aio server around a registry; `port` is the bound port."""

    def __init__(
        self,
        registry: ToolRegistry,
        config: ServerConfig,
        extra_handlers: tuple[grpc.GenericRpcHandler, ...] = (),
        hub: ProviderHub | None = None,
        authenticator: Authenticator | None = None,
    ) -> None:
        self.registry = registry
        self.config = config
        self.hub = ProviderHub(registry) if hub is None else hub
        self.authenticator = (
            development_authenticator(config) if authenticator is None else authenticator
        )
        self.health = health.aio.HealthServicer()
        self.port = 0
        self._server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", config.max_message_bytes),
                ("grpc.so_reuseport", 0),
            ]
        )
        registry_service_pb2_grpc.add_RegistryServiceServicer_to_server(
            RegistryServicer(RegistryHandlers(registry, self.hub, self.authenticator)),
            self._server,
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self._server.add_generic_rpc_handlers(extra_handlers)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )

    async def start(self) -> int:
        address = f"{self.config.host}:{self.config.port}"
        credentials = server_credentials(self.config)
        try:
            if credentials is None:
                self.port = self._server.add_insecure_port(address)
            else:
                self.port = self._server.add_secure_port(address, credentials)
        except RuntimeError as e:
            raise OSError(f"could not listen on {address}: {e}") from e
        if self.port == 0:
            raise OSError(f"could not listen on {address}")
        await self._server.start()
        serving = health_pb2.HealthCheckResponse.SERVING
        await self.health.set("", serving)
        await self.health.set(SERVICE_NAME, serving)
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        """Refuse new work, let calls in flight finish within the grace period."""
        await self.health.enter_graceful_shutdown()
        await self._server.stop(self.config.grace_seconds if grace is None else grace)

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: `serve` owns SIGINT and SIGTERM
    and stops both listeners together (uvicorn would re-raise the signal after
    its shutdown and kill the process before the gRPC listener drained)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _listening_socket(host: str, port: int) -> socket.socket:
    """A bound socket, so that port 0 works and the bound port is known before
    uvicorn starts."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise OSError(f"could not listen on {host}:{port}: {e}") from e
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise OSError(f"could not listen on {host}:{port}: {e}") from e
    return sock


def _connect_host(host: str) -> str:
    """Where a local client reaches a listener bound to `host` (a wildcard
    address means loopback), bracketed for a URL if IPv6."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"[{address}]" if address.version == 6 else str(address)


class HttpServer:
    """The gRPC-web/Connect listener (uvicorn) for code runs; `port` is the
    bound port and `base_url` the address a local client (the sandbox) uses."""

    def __init__(
        self,
        registry: ToolRegistry,
        capabilities: Capabilities,
        config: ServerConfig,
        *,
        hub: ProviderHub | None = None,
        authenticator: Authenticator | None = None,
    ) -> None:
        self.registry = registry
        self.capabilities = capabilities
        self.config = config
        # Never anonymous: the sandbox reaches this listener and must not be
        # able to drop its run token.
        auth = Authenticator(capabilities=capabilities) if authenticator is None else authenticator
        handlers = RegistryHandlers(
            registry, ProviderHub(registry) if hub is None else hub, auth.without_anonymous()
        )
        self.app = create_app(
            handlers,
            max_message_bytes=config.max_message_bytes,
            cors_origins=config.cors_origins,
        )
        self.port = 0
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def host(self) -> str:
        """The host part of `base_url` (for the sandbox's --allow-net)."""
        return _connect_host(self.config.http_bind_host)

    @property
    def base_url(self) -> str:
        if not self.port:
            raise RuntimeError("the HTTP listener has not started")
        return f"http://{self.host}:{self.port}"

    async def start(self) -> int:
        sock = _listening_socket(self.config.http_bind_host, self.config.http_port)
        self.port = int(sock.getsockname()[1])
        server = _Uvicorn(
            uvicorn.Config(
                self.app,
                lifespan="off",
                log_level="warning",
                log_config=None,
                access_log=False,
                interface="asgi3",
                ws="none",
                proxy_headers=False,
                server_header=False,
            )
        )
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="toolwire-http")
        while not server.started:
            if self._task.done():
                sock.close()
                error = self._task.exception()
                self._server = self._task = None
                self.port = 0
                raise OSError(f"the HTTP listener did not start: {error!r}")
            await asyncio.sleep(0.005)
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        """Refuse new connections, let requests in flight finish within the grace period."""
        if self._server is None or self._task is None:
            return
        grace = self.config.grace_seconds if grace is None else grace
        # uvicorn hands this to asyncio.wait_for (any float, though typed int); at
        # zero it would time out even with nothing in flight and log an error.
        self._server.config.timeout_graceful_shutdown = max(grace, 0.1)  # type: ignore[assignment]
        self._server.should_exit = True
        await self._task
        self._server = self._task = None


class ToolwireServers:
    """Both listeners over one registry, one ProviderHub, one Capabilities and
    one Authenticator: the code runtime issues run tokens from `capabilities`
    and hands the sandbox `http_base_url`. Without an authenticator the
    servers are a development server (loopback only, no tokens)."""

    def __init__(
        self,
        registry: ToolRegistry,
        config: ServerConfig,
        *,
        capabilities: Capabilities | None = None,
        authenticator: Authenticator | None = None,
    ) -> None:
        self.registry = registry
        self.config = config
        self.capabilities = Capabilities() if capabilities is None else capabilities
        self.development = authenticator is None
        self.authenticator = (
            development_authenticator(config, self.capabilities)
            if authenticator is None
            else authenticator
        )
        self.hub = ProviderHub(registry)
        self.grpc = GrpcServer(registry, config, hub=self.hub, authenticator=self.authenticator)
        self.http = HttpServer(
            registry, self.capabilities, config, hub=self.hub, authenticator=self.authenticator
        )

    @property
    def http_base_url(self) -> str:
        return self.http.base_url

    async def start(self) -> None:
        await self.grpc.start()
        try:
            await self.http.start()
        except BaseException:
            await self.grpc.stop(0)
            raise

    async def stop(self, grace: float | None = None) -> None:
        await asyncio.gather(self.grpc.stop(grace), self.http.stop(grace))


async def serve(
    registry: ToolRegistry,
    config: ServerConfig,
    *,
    capabilities: Capabilities | None = None,
    authenticator: Authenticator | None = None,
    on_started: Callable[[ToolwireServers], Awaitable[None]] | None = None,
    on_stopped: Callable[[], Awaitable[None]] | None = None,
    until: Callable[[ToolwireServers], Awaitable[None]] | None = None,
) -> None:
    """Run both listeners until SIGINT or SIGTERM, then shut both down gracefully.

    `capabilities` lets the caller share the run grants with what it wires in
    (the code runtime); `on_started` sees the started servers (bound ports,
    `http_base_url`); `on_stopped` runs after both listeners have stopped;
    when `until` (started with the servers) returns, they shut down as on a
    signal (e.g. an MCP client closed the stdio session)."""
    # Signals are handled from the first moment, so a SIGTERM that arrives while
    # the servers start (or while `on_started` runs) still stops them gracefully.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        servers = ToolwireServers(
            registry, config, capabilities=capabilities, authenticator=authenticator
        )
        await servers.start()
        if servers.development:
            log.warning(DEVELOPMENT_WARNING)
        log.info(
            "toolwire serving %s on %s:%d (gRPC) and %s (gRPC-web, Connect) with %d tools",
            SERVICE_NAME,
            config.host,
            servers.grpc.port,
            servers.http_base_url,
            len(registry.list()),
        )
        if on_started is not None:
            await on_started(servers)
        ending = None if until is None else asyncio.ensure_future(until(servers))
        if ending is not None:
            ending.add_done_callback(lambda _: stop.set())
        await stop.wait()
        if ending is not None and not ending.done():
            ending.cancel()
        log.info("shutting down (grace %.1f s)", config.grace_seconds)
        await servers.stop()
        if on_stopped is not None:
            await on_stopped()
        registry.close()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
