"""The toolwire server: one registry, served over gRPC with health and reflection.

This is the entry point that wires transports to the core; nothing else
imports a transport.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .providers import ProviderHub
from .registry import ToolRegistry
from .transport.grpc_servicer import RegistryServicer
from .v1 import registry_service_pb2, registry_service_pb2_grpc

log = logging.getLogger("toolwire")

SERVICE_NAME = registry_service_pb2.DESCRIPTOR.services_by_name["RegistryService"].full_name


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    max_message_bytes: int = 4 * 1024 * 1024
    grace_seconds: float = 5.0
    tool_modules: list[str] = field(default_factory=list)


class GrpcServer:
    """A started grpc.aio server around a registry; `port` is the bound port."""

    def __init__(
        self,
        registry: ToolRegistry,
        config: ServerConfig,
        extra_handlers: tuple[grpc.GenericRpcHandler, ...] = (),
    ) -> None:
        self.registry = registry
        self.config = config
        self.hub = ProviderHub(registry)
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
            RegistryServicer(registry, self.hub), self._server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self._server.add_generic_rpc_handlers(extra_handlers)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )

    async def start(self) -> int:
        address = f"{self.config.host}:{self.config.port}"
        try:
            self.port = self._server.add_insecure_port(address)
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


async def serve(registry: ToolRegistry, config: ServerConfig) -> None:
    """Run until SIGINT or SIGTERM, then shut down gracefully."""
    server = GrpcServer(registry, config)
    port = await server.start()
    log.info(
        "toolwire serving %s on %s:%d with %d tools",
        SERVICE_NAME,
        config.host,
        port,
        len(registry.list()),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down (grace %.1f s)", config.grace_seconds)
    await server.stop()
    registry.close()
