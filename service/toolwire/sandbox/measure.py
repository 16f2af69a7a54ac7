"""Cold versus warm runs of the sandbox: `python -m toolwire.sandbox.measure [-n N]`.

Prints the median time of a run (and its phases) for: a cold process (started
for the run), a warm one (from the pool), and the type check, first uncached,
then cached. The code makes one `__callTool__` call to a local port where
nothing listens, so the bridge's client is exercised without a registry.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import time
from collections.abc import Callable

from .models import RunOutcome
from .runtime import DenoRuntime

CODE = """
let answer = "none";
try {
  await __callTool__("echo", { text: "hi" });
} catch (error) {
  answer = error instanceof Error ? error.name : "thrown";
}
return answer;
"""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _median(outcomes: list[RunOutcome], field: Callable[[RunOutcome], float]) -> str:
    return f"{statistics.median(field(o) for o in outcomes) * 1000:7.1f} ms"


def _report(label: str, outcomes: list[RunOutcome]) -> None:
    bad = [o for o in outcomes if not o.ok]
    if bad:
        raise SystemExit(f"{label}: a run failed: {bad[0].error}")
    print(
        f"{label:<28} total {_median(outcomes, lambda o: o.duration_seconds)}"
        f" | start-up {_median(outcomes, lambda o: o.startup_seconds)}"
        f" | execute {_median(outcomes, lambda o: o.execute_seconds)}"
        f" | check {_median(outcomes, lambda o: o.check_seconds)}"
    )


async def _series(
    runtime: DenoRuntime, base_url: str, count: int, *, check: bool, vary: bool, settle: float
) -> list[RunOutcome]:
    outcomes = []
    for i in range(count):
        code = CODE + (f"\n// run {i} {time.time_ns()}\n" if vary else "")
        outcomes.append(
            await runtime.run(code, stubs="", base_url=base_url, token="t", check=check)
        )
        if settle:
            await asyncio.sleep(settle)  # let the pool refill, as between a model's turns
    return outcomes


async def main(count: int, pool_size: int) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}"
    async with DenoRuntime() as cold:
        await cold.run(CODE, stubs="", base_url=base_url, token="t", check=False)  # caches
        _report(
            "cold process, no check",
            await _series(cold, base_url, count, check=False, vary=True, settle=0),
        )
        _report(
            "cold, check (uncached)",
            await _series(cold, base_url, max(3, count // 3), check=True, vary=True, settle=0),
        )
        _report(
            "cold, check (cached)",
            await _series(cold, base_url, count, check=True, vary=False, settle=0),
        )
    async with DenoRuntime(pool_size=pool_size) as warm:
        await warm.warm(base_url)
        _report(
            f"warm (pool {pool_size}), no check",
            await _series(warm, base_url, count, check=False, vary=True, settle=0.3),
        )
        _report(
            f"warm (pool {pool_size}), cached check",
            await _series(warm, base_url, count, check=True, vary=False, settle=0.3),
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=10, help="runs per series")
    parser.add_argument("--pool", type=int, default=2, help="warm pool size")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.n, arguments.pool))
