"""What a toolwire dispatch costs, in process and over gRPC, measured side by side.

    .venv/bin/python bench/bench_dispatch.py [--quick] [--json PATH] [--profile]

1. `ToolRegistry.dispatch` in process (validation on): an async tool, a sync
   tool (worker thread) and a call with invalid arguments; median and p99.
2. The server-side steps of one Dispatch RPC, timed one by one in process.
3. Over loopback gRPC against bench/bench_server.py in its own process: the
   Dispatch RPC against a bare echo method on the same grpc.aio server that
   returns a response of the same size, sequentially (alternating blocks, so
   drift hits both alike) and with 20 concurrent callers on one channel.

`--profile` adds a cProfile of the server's event loop under Dispatch load.
A benchmark, not a test: it prints numbers and targets, and always exits 0
unless something broke.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import pstats
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import bench_server as srv
import grpc
from google.protobuf.internal import api_implementation
from toolwire import convert
from toolwire.approvals import ApprovalBook
from toolwire.audit import SqliteAuditLog
from toolwire.auth import Principal, Scope
from toolwire.limits import ConcurrencyLimits
from toolwire.output import finish, shape
from toolwire.policy.config import ToolwireConfig
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.tools import ToolContext
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc
from toolwire.validation import ArgumentValidator, parse_arguments

HERE = Path(__file__).resolve().parent
TARGET_IN_PROCESS_US = 20.0
TARGET_RATIO = 1.25
CALL_TIMEOUT = 10.0  # seconds; every RPC is bounded
SERVER_START_TIMEOUT = 30.0
KINDS = ("Dispatch", "Echo")
YIELD_EVERY = 50
"""In-process loops give the event loop a turn this often (untimed): a loop that
never runs keeps every cancelled timeout handle, which a real server does not."""


@dataclass(frozen=True)
class Sizes:
    in_process_calls: int
    in_process_warmup: int
    step_calls: int
    sequential_calls: int  # per kind
    sequential_block: int
    grpc_warmup: int  # per kind
    concurrent_callers: int
    concurrent_calls_per_caller: int  # per block
    concurrent_rounds: int  # blocks per kind


FULL = Sizes(20_000, 2_000, 20_000, 4_000, 250, 1_000, 20, 150, 4)
QUICK = Sizes(2_000, 200, 2_000, 600, 100, 100, 20, 10, 2)


# -- statistics ----------------------------------------------------------------


def summary(samples_ns: list[int]) -> dict[str, float]:
    """Median, p99 and mean in µs."""
    ordered = sorted(samples_ns)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return {
        "calls": len(ordered),
        "median_us": statistics.median(ordered) / 1e3,
        "p99_us": p99 / 1e3,
        "mean_us": statistics.fmean(ordered) / 1e3,
    }


def us(value: float) -> str:
    """A 12-character column of microseconds."""
    return f"{value:>9.1f} µs"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# -- 1. in process -------------------------------------------------------------


async def time_dispatch(
    registry: ToolRegistry,
    name: str,
    arguments: str,
    sizes: Sizes,
    *,
    expect_success: bool,
    principal: Principal | None = None,
) -> list[int]:
    first = await registry.dispatch(name, arguments, principal=principal)
    if first.success is not expect_success:
        raise RuntimeError(f"unexpected result from {name}: {first}")
    for _ in range(sizes.in_process_warmup):
        await registry.dispatch(name, arguments, principal=principal)
    gc.collect()
    clock = time.perf_counter_ns
    samples = [0] * sizes.in_process_calls
    for i in range(sizes.in_process_calls):
        if i % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # untimed: let the loop run as a server's would
        start = clock()
        await registry.dispatch(name, arguments, principal=principal)
        samples[i] = clock() - start
    return samples


async def in_process(sizes: Sizes) -> dict[str, dict[str, float]]:
    registry = srv.make_registry()
    try:
        cases = {
            "async tool": (srv.TOOL_NAME, srv.ARGUMENTS, True),
            "sync tool (worker thread)": (srv.SYNC_TOOL_NAME, srv.ARGUMENTS, True),
            "invalid arguments": (srv.TOOL_NAME, srv.BAD_ARGUMENTS, False),
        }
        results = {
            label: summary(await time_dispatch(registry, n, a, sizes, expect_success=ok))
            for label, (n, a, ok) in cases.items()
        }
    finally:
        registry.close()
    results[SECURED] = await secured_in_process(sizes)
    return results


SECURED = "async tool, policy+limits+audit"


async def secured_in_process(sizes: Sizes) -> dict[str, float]:
    """The async tool as `toolwire serve` runs it for a token's principal: the
    default policy, per-principal limits and the SQLite audit log."""
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-") as folder:
        audit = SqliteAuditLog(Path(folder) / "audit.sqlite", queue_size=1_000_000)
        registry = srv.make_registry(
            policy=PolicyEngine(ToolwireConfig(), approvals=ApprovalBook()),
            limits=ConcurrencyLimits(per_principal=64),
            audit=audit,
        )
        agent = Principal("agent", frozenset({Scope.DISPATCH}))
        try:
            samples = await time_dispatch(
                registry, srv.TOOL_NAME, srv.ARGUMENTS, sizes, expect_success=True, principal=agent
            )
        finally:
            registry.close()
            audit.close()
        if audit.dropped:
            raise RuntimeError(f"the audit dropped {audit.dropped} records")
        return summary(samples)


def print_in_process(results: dict[str, dict[str, float]], sizes: Sizes) -> None:
    print(
        f"1. In-process ToolRegistry.dispatch, validation on "
        f"({sizes.in_process_calls:,} calls each after {sizes.in_process_warmup:,} warm-up)"
    )
    print(f"   {'case':<28}{'median':>12}{'p99':>12}{'mean':>12}   target")
    for label, s in results.items():
        target = ""
        if label == "async tool":
            ok = s["median_us"] < TARGET_IN_PROCESS_US
            target = f"< {TARGET_IN_PROCESS_US:g} µs per call: {verdict(ok)}"
        elif label == SECURED:
            ratio = s["median_us"] / results["async tool"]["median_us"]
            target = f"{ratio:.2f}× the bare registry"
        print(f"   {label:<28}{us(s['median_us'])}{us(s['p99_us'])}{us(s['mean_us'])}   {target}")
    print()


# -- 2. the steps of one Dispatch RPC on the server ---------------------------


def mean_ns(fn: Callable[[], object], n: int) -> float:
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(n):
        fn()
    return (clock() - start) / n


async def amean_ns(fn: Callable[[], Awaitable[object]], n: int) -> float:
    clock = time.perf_counter_ns
    elapsed = 0
    for _ in range(n // YIELD_EVERY):
        await asyncio.sleep(0)  # untimed: let the loop run as a server's would
        start = clock()
        for _ in range(YIELD_EVERY):
            await fn()
        elapsed += clock() - start
    return elapsed / (n // YIELD_EVERY * YIELD_EVERY)


async def _noop() -> None:
    pass


async def _timeout_timer() -> None:
    # The cost of the timer `invoke` sets around every async handler.
    asyncio.get_running_loop().call_later(30.0, _noop_callback).cancel()


def _noop_callback() -> None:
    pass


async def steps(sizes: Sizes) -> dict[str, float]:
    """Mean µs of each step a Dispatch RPC runs in the servicer, and of what an
    echo handler runs instead. Steps inside `dispatch` use the core's public
    helpers the way `ToolRegistry.dispatch` does."""
    n = sizes.step_calls
    registry = srv.make_registry()
    try:
        raw = srv.dispatch_request().SerializeToString()
        request = rpb.DispatchRequest.FromString(raw)
        context = convert.context_from_proto(request.context)
        definition = registry.get(srv.TOOL_NAME)
        assert definition is not None and definition.input_schema is not None
        validator = ArgumentValidator(definition.input_schema)
        parsed = parse_arguments(srv.ARGUMENTS, registry.max_argument_bytes)
        checked = validator.check(parsed)
        tool_context = ToolContext(tool_name=srv.TOOL_NAME, call=context, deadline=1e9)
        value = await srv.lookup(checked, tool_context)
        shaped = shape(value)
        final = await registry.dispatch(srv.TOOL_NAME, srv.ARGUMENTS, context)
        response = rpb.DispatchResponse(result=convert.result_to_proto(final))
        for _ in range(sizes.in_process_warmup):
            await registry.dispatch(srv.TOOL_NAME, srv.ARGUMENTS, context)
        gc.collect()
        baseline = mean_ns(lambda: None, n)
        abaseline = await amean_ns(_noop, n)

        def m(fn: Callable[[], object]) -> float:
            return max(0.0, mean_ns(fn, n) - baseline) / 1e3

        async def am(fn: Callable[[], Awaitable[object]]) -> float:
            return max(0.0, await amean_ns(fn, n) - abaseline) / 1e3

        out = {
            "decode DispatchRequest": m(lambda: rpb.DispatchRequest.FromString(raw)),
            "convert.context_from_proto": m(lambda: convert.context_from_proto(request.context)),
            "registry.dispatch (total)": await am(
                lambda: registry.dispatch(srv.TOOL_NAME, srv.ARGUMENTS, context)
            ),
            "  parse_arguments (json.loads)": m(
                lambda: parse_arguments(srv.ARGUMENTS, registry.max_argument_bytes)
            ),
            "  ArgumentValidator.check": m(lambda: validator.check(parsed)),
            "  timeout timer (call_later + cancel)": await am(_timeout_timer),
            "  ToolContext(...)": m(
                lambda: ToolContext(tool_name=srv.TOOL_NAME, call=context, deadline=1e9)
            ),
            "  await handler": await am(lambda: srv.lookup(checked, tool_context)),
            "  output.shape": m(lambda: shape(value)),
            "  output.finish (build the result)": m(
                lambda: finish(shaped, registry.max_output_bytes, 1e-5)
            ),
            "convert.result_to_proto": m(lambda: convert.result_to_proto(final)),
            "DispatchResponse(result=...)": m(
                lambda: rpb.DispatchResponse(result=convert.result_to_proto(final))
            ),
            "serialize DispatchResponse": m(response.SerializeToString),
        }
        out["DispatchResponse(result=...)"] = max(
            0.0, out["DispatchResponse(result=...)"] - out["convert.result_to_proto"]
        )
        return out
    finally:
        registry.close()


def print_steps(out: dict[str, float], sizes: Sizes) -> None:
    print(
        f"2. Server-side steps of one Dispatch RPC, in process "
        f"(mean of {sizes.step_calls:,} each, loop overhead subtracted)"
    )
    inner = [k for k in out if k.startswith("  ")]
    rest = max(0.0, out["registry.dispatch (total)"] - sum(out[k] for k in inner))
    for label, value in out.items():
        print(f"   {label:<36}{value:>7.2f} µs")
        if label == inner[-1]:
            print(f"   {'  (the rest: clock, lookup, calls)':<36}{rest:>7.2f} µs")
    toolwire = (
        out["convert.context_from_proto"]
        + out["registry.dispatch (total)"]
        + out["convert.result_to_proto"]
        + out["DispatchResponse(result=...)"]
    )
    both = out["decode DispatchRequest"] + out["serialize DispatchResponse"]
    print(
        f"   => Dispatch handler ≈ {toolwire + both:.1f} µs of Python per call; "
        f"the echo handler ≈ {both:.1f} µs (decode + serialize)"
    )
    print("   (hot loops: inside a server, between network events, the same code runs slower)")
    print()


# -- 3. over gRPC --------------------------------------------------------------


class ServerProcess:
    """bench_server.py in a child process on 127.0.0.1; always stopped."""

    def __init__(self, extra_args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "bench_server.py"), *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.port = self._read_port()

    def _read_port(self) -> int:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], SERVER_START_TIMEOUT)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"bench_server did not start (said {line!r})")
        return int(line.split()[1])

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


Call = Callable[..., Awaitable[Any]]


class Client:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        stub = rpc.RegistryServiceStub(channel)
        echo = channel.unary_unary(
            srv.ECHO_METHOD,
            request_serializer=rpb.DispatchRequest.SerializeToString,
            response_deserializer=rpb.DispatchResponse.FromString,
            _registered_method=True,  # as the generated stub does for Dispatch
        )
        self.calls: dict[str, Call] = {"Dispatch": stub.Dispatch, "Echo": echo}
        self._cpu = channel.unary_unary(srv.CPU_METHOD)
        self._profile = channel.unary_unary(srv.PROFILE_METHOD)
        self.request = srv.dispatch_request()

    async def server_cpu_ns(self) -> int:
        return int(await self._cpu(b"", timeout=CALL_TIMEOUT))

    async def profile(self, command: bytes) -> None:
        await self._profile(command, timeout=CALL_TIMEOUT)

    async def check(self) -> int:
        """Both answer alike; returns the response size in bytes."""
        sizes = set()
        for kind, call in self.calls.items():
            response = await call(self.request, timeout=CALL_TIMEOUT)
            if not response.result.success or not response.result.output:
                raise RuntimeError(f"{kind} answered {response}")
            sizes.add(response.ByteSize())
        if len(sizes) != 1:
            raise RuntimeError(f"Dispatch and Echo responses differ in size: {sizes}")
        return sizes.pop()

    async def run(self, kind: str, calls: int, samples: list[int]) -> None:
        call, request, clock = self.calls[kind], self.request, time.perf_counter_ns
        for _ in range(calls):
            start = clock()
            await call(request, timeout=CALL_TIMEOUT)
            samples.append(clock() - start)


def _order(round_index: int) -> tuple[str, ...]:
    return KINDS if round_index % 2 == 0 else KINDS[::-1]


async def sequential(client: Client, sizes: Sizes) -> dict[str, Any]:
    samples: dict[str, list[int]] = {k: [] for k in KINDS}
    cpu = dict.fromkeys(KINDS, 0)
    rounds = math.ceil(sizes.sequential_calls / sizes.sequential_block)
    for r in range(rounds):
        for kind in _order(r):
            before = await client.server_cpu_ns()
            await client.run(kind, sizes.sequential_block, samples[kind])
            cpu[kind] += await client.server_cpu_ns() - before
    out: dict[str, Any] = {}
    for kind in KINDS:
        out[kind] = summary(samples[kind]) | {
            "server_cpu_us_per_call": cpu[kind] / len(samples[kind]) / 1e3
        }
    out["block"] = sizes.sequential_block
    return out


async def concurrent(client: Client, sizes: Sizes) -> dict[str, Any]:
    samples: dict[str, list[int]] = {k: [] for k in KINDS}
    wall = dict.fromkeys(KINDS, 0)
    cpu = dict.fromkeys(KINDS, 0)
    for r in range(sizes.concurrent_rounds):
        for kind in _order(r):
            before = await client.server_cpu_ns()
            start = time.perf_counter_ns()
            await asyncio.gather(
                *(
                    client.run(kind, sizes.concurrent_calls_per_caller, samples[kind])
                    for _ in range(sizes.concurrent_callers)
                )
            )
            wall[kind] += time.perf_counter_ns() - start
            cpu[kind] += await client.server_cpu_ns() - before
    out: dict[str, Any] = {}
    for kind in KINDS:
        n = len(samples[kind])
        out[kind] = summary(samples[kind]) | {
            "calls_per_second": n / (wall[kind] / 1e9),
            "wall_us_per_call": wall[kind] / n / 1e3,
            "server_cpu_us_per_call": cpu[kind] / n / 1e3,
        }
    out["callers"] = sizes.concurrent_callers
    return out


async def over_grpc(port: int, sizes: Sizes) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        await asyncio.wait_for(channel.channel_ready(), SERVER_START_TIMEOUT)
        client = Client(channel)
        response_bytes = await client.check()
        for r in range(2):
            for kind in _order(r):
                await client.run(kind, sizes.grpc_warmup // 2, [])
        gc.collect()
        return {
            "request_bytes": client.request.ByteSize(),
            "response_bytes": response_bytes,
            "sequential": await sequential(client, sizes),
            "concurrent": await concurrent(client, sizes),
        }


def print_grpc(results: dict[str, Any], sizes: Sizes, port: int) -> None:
    print(
        f"3. gRPC over loopback: bench_server.py in its own process on 127.0.0.1:{port}, "
        f"one grpc.aio channel; request {results['request_bytes']} B, "
        f"response {results['response_bytes']} B for both"
    )
    seq = results["sequential"]
    print(
        f"   a) sequential: {sizes.sequential_calls:,} calls each, "
        f"alternating blocks of {seq['block']}"
    )
    print(f"      {'':<14}{'median':>12}{'p99':>12}{'mean':>12}{'server CPU/call':>17}")
    for kind in KINDS:
        s = seq[kind]
        print(
            f"      {kind:<14}{us(s['median_us'])}{us(s['p99_us'])}{us(s['mean_us'])}"
            f"     {us(s['server_cpu_us_per_call'])}"
        )
    ratio = seq["Dispatch"]["median_us"] / seq["Echo"]["median_us"]
    seq["ratio_median"] = ratio
    seq["ratio_mean"] = seq["Dispatch"]["mean_us"] / seq["Echo"]["mean_us"]
    seq["ratio_server_cpu"] = (
        seq["Dispatch"]["server_cpu_us_per_call"] / seq["Echo"]["server_cpu_us_per_call"]
    )
    print(
        f"      {'Dispatch/Echo':<14}{ratio:>11.2f}×{'':>12}{seq['ratio_mean']:>11.2f}×"
        f"{seq['ratio_server_cpu']:>16.2f}×"
    )
    print(f"      target: median ratio ≤ {TARGET_RATIO:g}×: {verdict(ratio <= TARGET_RATIO)}")
    con = results["concurrent"]
    total = sizes.concurrent_calls_per_caller * sizes.concurrent_callers
    print(
        f"   b) {con['callers']} concurrent callers: {sizes.concurrent_rounds} alternating "
        f"blocks of {total:,} calls each"
    )
    print(
        f"      {'':<14}{'calls/s':>12}{'wall/call':>12}{'median':>12}{'p99':>12}"
        f"{'server CPU/call':>17}"
    )
    for kind in KINDS:
        s = con[kind]
        print(
            f"      {kind:<14}{s['calls_per_second']:>12,.0f}{us(s['wall_us_per_call'])}"
            f"{us(s['median_us'])}{us(s['p99_us'])}     {us(s['server_cpu_us_per_call'])}"
        )
    ratio = con["Echo"]["calls_per_second"] / con["Dispatch"]["calls_per_second"]
    con["ratio_time"] = ratio
    con["ratio_server_cpu"] = (
        con["Dispatch"]["server_cpu_us_per_call"] / con["Echo"]["server_cpu_us_per_call"]
    )
    cpu_ratio = con["ratio_server_cpu"]
    print(f"      {'Dispatch/Echo':<14}{'':>12}{ratio:>11.2f}×{'':>24}{cpu_ratio:>16.2f}×")
    print(
        f"      target: time per call (= inverse throughput) ratio ≤ {TARGET_RATIO:g}×: "
        f"{verdict(ratio <= TARGET_RATIO)}"
    )
    print()


# -- --profile ----------------------------------------------------------------


async def profiled(port: int, sizes: Sizes, path: str) -> dict[str, tuple[int, Any]]:
    """Each kind's load under a fresh server-side cProfile: (calls, raw stats)."""
    out: dict[str, tuple[int, Any]] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        await asyncio.wait_for(channel.channel_ready(), SERVER_START_TIMEOUT)
        client = Client(channel)
        for kind in KINDS:
            await client.run(kind, sizes.grpc_warmup, [])
        for kind in KINDS:
            samples: list[int] = []
            await client.profile(b"start")
            await client.run(kind, sizes.sequential_calls, samples)
            await asyncio.gather(
                *(
                    client.run(kind, sizes.concurrent_calls_per_caller, samples)
                    for _ in range(sizes.concurrent_callers)
                )
            )
            await client.profile(b"stop")
            out[kind] = (len(samples), pstats.Stats(path).stats)  # type: ignore[attr-defined]
    return out


def _subtree(stats: dict[Any, Any], root_file: str, root: str) -> dict[Any, float]:
    """Own time (s) of each function spent on behalf of calls under `root`,
    from cProfile's per-caller attribution (approximate for shared helpers)."""
    roots = {key for key in stats if key[2] == root and key[0].endswith(root_file)}
    inside = set(roots)
    grew = True
    while grew:
        grew = False
        for key, (*_, callers) in stats.items():
            if key not in inside and any(c in inside for c in callers):
                inside.add(key)
                grew = True
    own: dict[Any, float] = {}
    for key in inside:
        _cc, _nc, tt, _ct, callers = stats[key]
        own[key] = tt if key in roots else sum(v[2] for c, v in callers.items() if c in inside)
    return own


def _where(key: tuple[str, int, str]) -> str:
    file, line, func = key
    return f"{Path(file).name}:{line}({func})" if line else func


def print_profile(runs: dict[str, tuple[int, Any]], top: int = 20) -> dict[str, Any]:
    (d_calls, d_raw), (e_calls, e_raw) = runs["Dispatch"], runs["Echo"]
    d_total = sum(v[2] for v in d_raw.values()) / d_calls * 1e6
    e_total = sum(v[2] for v in e_raw.values()) / e_calls * 1e6
    print(
        f"4. cProfile of the server's event-loop thread, {d_calls:,} calls of each kind "
        f"(sequential + concurrent). The profiler inflates Python-heavy rows; epoll.poll "
        f"is mostly idle waiting; grpc's Cython internals show up as Context.run's own time."
    )
    print(
        f"   a) whole thread: Dispatch {d_total:.1f} µs per call, Echo {e_total:.1f} µs "
        f"per call; top by Dispatch's own time"
    )
    print(f"   {'Dispatch µs':>12}{'Echo µs':>10}{'D calls':>9}{'E calls':>9}  function (per RPC)")
    for key, (_cc, nc, tt, _ct, _callers) in sorted(
        d_raw.items(), key=lambda kv: kv[1][2], reverse=True
    )[:top]:
        e = e_raw.get(key, (0, 0, 0.0, 0.0, {}))
        print(
            f"   {tt / d_calls * 1e6:>12.2f}{e[2] / e_calls * 1e6:>10.2f}"
            f"{nc / d_calls:>9.2f}{e[1] / e_calls:>9.2f}  {_where(key)}"
        )
    own = _subtree(d_raw, "grpc_servicer.py", "Dispatch")
    inside = sum(own.values())
    print(
        f"   b) under RegistryServicer.Dispatch: {inside / d_calls * 1e6:.1f} µs per call; "
        f"top by own time spent there"
    )
    print(f"   {'own µs/call':>12}{'share':>8}  function")
    ranked = sorted(own.items(), key=lambda kv: kv[1], reverse=True)[:top]
    for key, tt in ranked:
        print(f"   {tt / d_calls * 1e6:>12.2f}{tt / inside:>8.0%}  {_where(key)}")
    print()
    return {
        "calls": d_calls,
        "thread_us_per_call": {"Dispatch": d_total, "Echo": e_total},
        "dispatch_us_per_call": inside / d_calls * 1e6,
        "dispatch_top": [
            {"function": _where(k), "own_us_per_call": t / d_calls * 1e6} for k, t in ranked
        ],
    }


# -- main ------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "grpcio": version("grpcio"),
        "protobuf": f"{version('protobuf')} ({api_implementation.Type()})",
        "pydantic": version("pydantic"),
        "jsonschema_rs": version("jsonschema_rs"),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sizes = QUICK if args.quick else FULL
    began = time.perf_counter()
    env = environment()
    print(
        f"toolwire dispatch benchmark{' (--quick)' if args.quick else ''}: "
        f"Python {env['python']}, grpcio {env['grpcio']}, protobuf {env['protobuf']}, "
        f"pydantic {env['pydantic']}, jsonschema_rs {env['jsonschema_rs']}, "
        f"{env['cpus']} CPUs, {env['platform']}"
    )
    print(
        f"tool '{srv.TOOL_NAME}': async, returns a short string; arguments {srv.ARGUMENTS}; "
        f"invalid case {srv.BAD_ARGUMENTS}"
    )
    load = os.getloadavg()[0]
    print(
        f"load average {load:.2f} at start on {env['cpus']} CPUs (other work on the machine "
        f"moves absolute numbers; alternating blocks keep the ratios fair)"
    )
    print()
    results: dict[str, Any] = {"environment": env | {"loadavg_1m": load}, "sizes": asdict(sizes)}
    results["in_process"] = await in_process(sizes)
    print_in_process(results["in_process"], sizes)
    results["steps_us"] = await steps(sizes)
    print_steps(results["steps_us"], sizes)

    server = ServerProcess([])
    try:
        results["grpc"] = await over_grpc(server.port, sizes)
        print_grpc(results["grpc"], sizes, server.port)
    finally:
        server.stop()

    if args.profile:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "server.prof")
            server = ServerProcess(["--profile", path])
            try:
                runs = await profiled(server.port, sizes, path)
            finally:
                server.stop()
            results["profile"] = print_profile(runs)

    results["elapsed_seconds"] = time.perf_counter() - began
    print(f"done in {results['elapsed_seconds']:.1f} s")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small N)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile the server under Dispatch load"
    )
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
