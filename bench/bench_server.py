"""The server half of the dispatch benchmark, run as its own process.

It hosts a toolwire `GrpcServer` with one trivial async tool and, on the same
grpc.aio server, a bare echo method that returns a precomputed
`DispatchResponse` of the shape a real dispatch returns, so the two differ only
in what toolwire does per call. It prints `PORT <n>` once it listens on
127.0.0.1, and stops on SIGTERM, SIGINT or when its stdin closes (the
benchmark went away).

Control methods (raw bytes, for the benchmark only):
  /toolwire.bench.Control/CpuTime   -> this process's CPU time in ns (ASCII)
  /toolwire.bench.Control/Profile   b"start" / b"stop": cProfile the event-loop
                                    thread anew; "stop" writes the stats to --profile
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

import grpc
from toolwire import convert
from toolwire.models import ParameterType, ToolDefinition, ToolParameter
from toolwire.registry import ToolRegistry
from toolwire.server import GrpcServer, ServerConfig
from toolwire.tools import Tool, ToolContext
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb

TOOL_NAME = "lookup"
SYNC_TOOL_NAME = "lookup_sync"
ARGUMENTS = '{"query": "weather in Paris", "mode": "fast", "limit": 5}'
BAD_ARGUMENTS = '{"query": "weather in Paris", "mode": "slow", "limit": "five"}'
CALL_CONTEXT = pb.CallContext(caller_id="bench", session_id="s-1", user_id="u-1")
ECHO_METHOD = "/toolwire.bench.Echo/Echo"
CPU_METHOD = "/toolwire.bench.Control/CpuTime"
PROFILE_METHOD = "/toolwire.bench.Control/Profile"


def _definition(name: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="Look something up (a benchmark tool that does nothing).",
        parameters=(
            ToolParameter(name="query", type=ParameterType.STRING, required=True),
            ToolParameter(name="mode", type=ParameterType.STRING, enum_values=("fast", "exact")),
            ToolParameter(
                name="limit",
                type=ParameterType.INTEGER,
                json_schema={"minimum": 1, "maximum": 100},
            ),
        ),
    )


async def lookup(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return f"{arguments['query']}: nothing found"


def lookup_sync(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return f"{arguments['query']}: nothing found"


def make_registry(**security: Any) -> ToolRegistry:
    """The registry both halves of the benchmark use: one async, one sync tool.
    `security` (policy, limits, audit) as `toolwire serve` wires them."""
    registry = ToolRegistry(**security)
    registry.register(Tool.of(_definition(TOOL_NAME), lookup))
    registry.register(Tool.of(_definition(SYNC_TOOL_NAME), lookup_sync))
    return registry


def dispatch_request() -> rpb.DispatchRequest:
    """The request the client sends to both Dispatch and Echo."""
    return rpb.DispatchRequest(name=TOOL_NAME, arguments_json=ARGUMENTS, context=CALL_CONTEXT)


async def _serve(profile_path: str | None) -> None:
    registry = make_registry()
    # What a real Dispatch of the benchmark request answers, so sizes match.
    sample = await registry.dispatch(TOOL_NAME, ARGUMENTS)
    assert sample.success, sample.error
    echo_response = rpb.DispatchResponse(result=convert.result_to_proto(sample))

    async def echo(request: rpb.DispatchRequest, context: Any) -> rpb.DispatchResponse:
        return echo_response

    profiler: cProfile.Profile | None = None

    async def cpu_time(request: bytes, context: Any) -> bytes:
        return str(time.process_time_ns()).encode()

    async def profile(request: bytes, context: Any) -> bytes:
        nonlocal profiler
        if request == b"start" and profiler is None:
            profiler = cProfile.Profile()
            profiler.enable()
        elif request == b"stop" and profiler is not None:
            profiler.disable()
            if profile_path:
                profiler.dump_stats(profile_path)
            profiler = None
        return b"ok"

    handlers = (
        grpc.method_handlers_generic_handler(
            "toolwire.bench.Echo",
            {
                "Echo": grpc.unary_unary_rpc_method_handler(
                    echo,
                    request_deserializer=rpb.DispatchRequest.FromString,
                    response_serializer=rpb.DispatchResponse.SerializeToString,
                )
            },
        ),
        grpc.method_handlers_generic_handler(
            "toolwire.bench.Control",
            {
                "CpuTime": grpc.unary_unary_rpc_method_handler(cpu_time),
                "Profile": grpc.unary_unary_rpc_method_handler(profile),
            },
        ),
    )
    server = GrpcServer(registry, ServerConfig(host="127.0.0.1", port=0, grace_seconds=0), handlers)
    port = await server.start()
    print(f"PORT {port}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def on_stdin() -> None:
        if not sys.stdin.buffer.read1(4096):  # EOF: the benchmark is gone
            loop.remove_reader(sys.stdin.fileno())
            stop.set()

    loop.add_reader(sys.stdin.fileno(), on_stdin)
    try:
        await stop.wait()
    finally:
        await server.stop(0)
        registry.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", metavar="PATH", help="where Profile 'stop' writes stats")
    args = parser.parse_args()
    asyncio.run(_serve(args.profile))


if __name__ == "__main__":
    main()
