"""Code mode benchmark: gRPC-web Dispatch from Deno against native gRPC from
Python, and `execute_code` cold and warm starts, measured in one run.

    .venv/bin/python bench/bench_code_mode.py [--calls 500] [--runs 10]

A `toolwire serve` process hosts a trivial `echo` tool. Python dispatches it
over native gRPC; code in the Deno sandbox (started through `execute_code`)
dispatches it over gRPC-web with its run token and times its own calls. Cold
start is the first `execute_code` after the server started (empty type-check
cache); warm starts repeat a one-call run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolwire.models import CallContext
from toolwire_client import AsyncToolwireClient

HERE = Path(__file__).resolve().parent
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
CONTEXT = CallContext(caller_id="bench", user_id="bench")

DENO_LOOP = """
const n = {calls};
for (let i = 0; i < 20; i++) await echo({{ text: "warm" }});
const times: number[] = [];
for (let i = 0; i < n; i++) {{
  const t0 = performance.now();
  await echo({{ text: "x" }});
  times.push(performance.now() - t0);
}}
times.sort((a, b) => a - b);
return {{ median_ms: times[Math.floor(n / 2)], mean_ms: times.reduce((a, b) => a + b, 0) / n }};
"""
ONE_CALL = 'return await echo({ text: "hello" });'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_ready(client: AsyncToolwireClient) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if any(t.name == "echo" for t in await client.list()):
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.1)


async def python_dispatch(client: AsyncToolwireClient, calls: int) -> float:
    for _ in range(20):
        await client.dispatch("echo", {"text": "warm"})
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        await client.dispatch("echo", {"text": "x"})
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def execute(client: AsyncToolwireClient, code: str) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    result = await client.dispatch("execute_code", {"code": code}, context=CONTEXT, timeout=120)
    elapsed = (time.perf_counter() - start) * 1e3
    if not result.success:
        raise RuntimeError(f"execute_code failed: {result.error}")
    return elapsed, result.structured_output


async def main(calls: int, runs: int) -> None:
    port = free_port()
    data = tempfile.mkdtemp(prefix="toolwire-bench-")
    server = subprocess.Popen(  # noqa: ASYNC220 (returns at once)
        [
            TOOLWIRE, "serve", "--port", str(port), "--http-port", "0", "--data-dir", data,
            "--disable", "web", "--disable", "net", "--disable", "fs", "--disable", "runtime",
            "--disable", "memory", "--tools", "bench_tools",
            "--code-call-budget", str(calls + 100),
        ],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with AsyncToolwireClient(f"127.0.0.1:{port}") as client:
            await wait_ready(client)
            cold_ms, _ = await execute(client, ONE_CALL)
            warm = [(await execute(client, ONE_CALL))[0] for _ in range(runs)]
            _, report = await execute(client, DENO_LOOP.format(calls=calls))
            deno = report["value"]
            if not isinstance(deno, dict):
                raise RuntimeError(f"the Deno loop returned {report}")
            assert isinstance(deno, dict)
            python_ms = await python_dispatch(client, calls)
    finally:
        server.terminate()
        server.wait(15)
    deno_ms = float(deno["median_ms"])
    print(
        f"toolwire code-mode benchmark: {calls} calls per side, {runs} warm runs, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"  Dispatch, native gRPC from Python     median {python_ms * 1e3:8.1f} µs")
    print(f"  Dispatch, gRPC-web from Deno (sandbox) median {deno_ms * 1e3:8.1f} µs")
    ratio = deno_ms / python_ms
    print(
        f"  Deno/Python ratio {ratio:.2f}×   target ≤ 1.5×: {'met' if ratio <= 1.5 else 'MISSED'}"
    )
    print(f"  execute_code cold start (first run, one tool call)  {cold_ms:8.1f} ms")
    warm_ms = statistics.median(warm)
    print(
        f"  execute_code warm start (median of {runs}, one tool call) {warm_ms:8.1f} ms"
        f"   target < 150 ms: {'met' if warm_ms < 150 else 'MISSED'}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.runs))
