"""Runs in the Deno sandbox: values, console, errors, the bridge, limits, the pool."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from toolwire.models import ToolDefinition
from toolwire.sandbox import DenoRuntime, Limits, RunOutcome
from toolwire.sandbox.memory import cgroup_support
from toolwire.stubs import generate_stubs

FAST = Limits(timeout_seconds=10, heap_mb=64, memory_mb=256)
"""The limits of the session's runtime too (see conftest)."""


async def run(runtime: DenoRuntime, code: str, base_url: str = "", **options: Any) -> RunOutcome:
    options.setdefault("check", False)
    return await runtime.run(code, stubs="", base_url=base_url, token="run-token", **options)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def process_exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def live_processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


# --- values and console -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("return 6 * 7;", 42),
        ("return 2.5;", 2.5),
        ('return "héllo";', "héllo"),
        (
            "return { a: 1, b: [true, null, 'x'], c: { d: -1 } };",
            {"a": 1, "b": [True, None, "x"], "c": {"d": -1}},
        ),
        ("return undefined;", None),
        ("const x = 1;", None),
        ("return await Promise.resolve([1, 2, 3]);", [1, 2, 3]),
        ("return new Date(0);", "1970-01-01T00:00:00.000Z"),
    ],
)
async def test_return_values(runtime: DenoRuntime, code: str, value: object) -> None:
    outcome = await run(runtime, code)
    assert outcome.ok, outcome.error
    assert outcome.value == value
    assert outcome.error == ""
    assert outcome.limit_hit is None
    assert outcome.exit_code == 0


async def test_console_output_is_captured_from_stdout_and_stderr(runtime: DenoRuntime) -> None:
    outcome = await run(
        runtime,
        'console.log("one", { two: 2 });\nconsole.error("three");\n'
        "await new Promise((resolve) => setTimeout(resolve, 20));\n"
        'console.warn("four");\nreturn "done";',
    )
    assert outcome.ok
    assert outcome.value == "done"
    assert outcome.console == "one { two: 2 }\nthree\nfour\n"


async def test_timings_are_reported(runtime: DenoRuntime) -> None:
    outcome = await run(runtime, "return 1;")
    assert outcome.duration_seconds > 0
    assert outcome.startup_seconds > 0
    assert outcome.execute_seconds > 0
    assert not outcome.warm
    assert outcome.check_seconds == 0


# --- errors ----------------------------------------------------------------------------


async def test_uncaught_error_has_name_message_and_a_stack_in_the_codes_lines(
    runtime: DenoRuntime,
) -> None:
    outcome = await run(
        runtime,
        'console.log("before");\n'
        "function explode(what: string) {\n"
        "  throw new RangeError(`no ${what}`);\n"
        "}\n"
        'explode("luck");\n',
    )
    assert not outcome.ok
    assert outcome.console == "before\n"
    assert outcome.error.splitlines() == [
        "RangeError: no luck",
        "    at explode (line 3:9)",
        "    at line 5:1",
    ]
    assert "runner.ts" not in outcome.error
    assert "file://" not in outcome.error


async def test_syntax_error_without_check_is_located_in_the_code(runtime: DenoRuntime) -> None:
    outcome = await run(runtime, "const a = 1;\nconst b = ;\nreturn a;")
    assert not outcome.ok
    assert outcome.error.startswith("SyntaxError: Expression expected")
    assert "line 2:11" in outcome.error
    assert "\n2 | const b = ;\n" in outcome.error


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("throw 'just a string';", "a non-Error value was thrown: just a string"),
        (
            "Promise.reject(new Error('floating'));\n"
            "await new Promise((resolve) => setTimeout(resolve, 100));\nreturn 1;",
            "Error: floating (an unhandled promise rejection",
        ),
        (
            "setTimeout(() => { throw new Error('in a timer'); }, 1);\n"
            "await new Promise((resolve) => setTimeout(resolve, 100));\nreturn 1;",
            "Error: in a timer",
        ),
        ("return 10n;", "not JSON-serializable: Do not know how to serialize a BigInt"),
        ("const a: Record<string, unknown> = {};\na.self = a;\nreturn a;", "circular structure"),
        ("return () => 1;", "the code returned a function, which has no JSON form"),
    ],
)
async def test_failures_are_reported_clearly(runtime: DenoRuntime, code: str, message: str) -> None:
    outcome = await run(runtime, code)
    assert not outcome.ok
    assert message in outcome.error
    assert outcome.limit_hit is None


async def test_the_code_ends_when_it_returns(runtime: DenoRuntime) -> None:
    # Timers left behind do not run after the result: the process exits at once.
    outcome = await run(runtime, "setTimeout(() => console.log('late'), 200);\nreturn 'early';")
    assert outcome.ok
    assert outcome.value == "early"
    assert outcome.console == ""


# --- the bridge --------------------------------------------------------------------------


def _echo_stubs() -> str:
    definition = ToolDefinition(
        name="echo",
        description="Echo a text.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    )
    return generate_stubs([definition])


async def test_call_tool_is_defined_and_an_unreachable_registry_rejects(
    runtime: DenoRuntime, base_url: str
) -> None:
    outcome = await runtime.run(
        "const defined = typeof __callTool__;\n"
        "try {\n"
        '  await echo({ text: "hi" });\n'
        '  return { defined, caught: "nothing" };\n'
        "} catch (error) {\n"
        "  return { defined, caught: error instanceof Error ? error.name : typeof error,\n"
        "           message: error instanceof Error ? error.message : String(error) };\n"
        "}\n",
        stubs=_echo_stubs(),
        base_url=base_url,
        token="run-token",
        check=False,
    )
    assert outcome.ok, outcome.error
    assert outcome.value["defined"] == "function"  # type: ignore[index,call-overload]
    assert outcome.value["caught"] == "ConnectError"  # type: ignore[index,call-overload]
    assert "fetch failed" in outcome.value["message"]  # type: ignore[index,call-overload]


async def test_an_uncaught_failed_tool_call_points_at_the_callers_line(
    runtime: DenoRuntime, base_url: str
) -> None:
    outcome = await runtime.run(
        'const greeting = "hi";\nawait echo({ text: greeting });\n',
        stubs=_echo_stubs(),
        base_url=base_url,
        token="run-token",
        check=False,
    )
    assert not outcome.ok
    assert outcome.error.startswith("ConnectError: ")
    assert "    at echo (in the tool stubs)" in outcome.error
    assert outcome.error.endswith("    at line 2:1")


async def test_the_allowed_address_is_reachable(runtime: DenoRuntime, http_server: str) -> None:
    outcome = await run(
        runtime,
        f'const response = await fetch("{http_server}/");\nreturn await response.text();',
        base_url=http_server,
    )
    assert outcome.ok, outcome.error
    assert outcome.value == "hello from loopback"


# --- limits --------------------------------------------------------------------------------


async def test_timeout_kills_an_infinite_loop_and_its_process_group(runtime: DenoRuntime) -> None:
    started = time.perf_counter()
    outcome = await run(
        runtime,
        "console.log(Deno.pid);\nwhile (true) {}\n",
        limits=FAST.model_copy(update={"timeout_seconds": 1.0}),
    )
    assert time.perf_counter() - started < 5
    assert not outcome.ok
    assert outcome.limit_hit == "timeout"
    assert outcome.error == "the code did not finish within 1 s and was stopped"
    assert outcome.exit_code == -9
    pid = int(outcome.console.strip())
    assert not group_alive(pid)  # the runner leads its own group: the whole group is gone
    assert not process_exists(pid)


async def test_heap_exhaustion_is_a_memory_limit(runtime: DenoRuntime) -> None:
    outcome = await run(
        runtime,
        "const hoard: number[][] = [];\nwhile (true) hoard.push(new Array(1e6).fill(1));",
    )
    assert not outcome.ok
    assert outcome.limit_hit == "memory"
    assert "out of memory" in outcome.error
    assert "V8 heap limit 64 MiB" in outcome.error
    assert "Last few GCs" not in outcome.console  # V8's crash report is not the code's console


async def test_memory_outside_the_heap_is_capped_too(runtime: DenoRuntime) -> None:
    # ArrayBuffers do not count against --max-old-space-size: RLIMIT_DATA stops them.
    outcome = await run(
        runtime,
        "const hoard: Uint8Array[] = [];\n"
        "for (let i = 0; i < 64; i++) hoard.push(new Uint8Array(64 << 20).fill(1));\n"
        "return hoard.length;",
    )
    assert not outcome.ok
    assert outcome.limit_hit == "memory"
    assert "RangeError: Array buffer allocation failed" in outcome.error
    assert "RLIMIT_DATA: 256 MiB" in outcome.memory_cap


async def test_cgroup_cap_applies_where_the_machine_allows_it(runtime: DenoRuntime) -> None:
    support = cgroup_support()
    limits = FAST.model_copy(update={"cgroup": True})
    outcome = await run(
        runtime,
        "const hoard: Uint8Array[] = [];\n"
        "for (let i = 0; i < 64; i++) hoard.push(new Uint8Array(32 << 20).fill(1));\n"
        "return hoard.length;",
        limits=limits,
    )
    assert not outcome.ok
    assert outcome.limit_hit == "memory"
    if support.parent is None:
        assert f"no cgroup cap ({support.reason})" in outcome.memory_cap
    else:
        assert f"cgroup v{support.version}: 256 MiB" in outcome.memory_cap
        assert not [p for p in support.parent.iterdir() if p.name.startswith("toolwire-sandbox-")]
    # A cgroup that cannot be had never fails a run.
    fine = await run(runtime, "return 1;", limits=limits)
    assert fine.ok


async def test_output_flood_is_an_output_limit(runtime: DenoRuntime) -> None:
    outcome = await run(runtime, 'while (true) console.log("spam ".repeat(20));')
    assert not outcome.ok
    assert outcome.limit_hit == "output"
    assert "more than 65536 bytes of console output" in outcome.error
    assert outcome.console.endswith("[console output cut at 65536 bytes]")
    assert len(outcome.console.encode()) < 65536 + 100


async def test_an_oversized_return_value_is_an_output_limit(runtime: DenoRuntime) -> None:
    limits = FAST.model_copy(update={"max_value_bytes": 64 * 1024})
    outcome = await run(runtime, 'return "x".repeat(1 << 20);', limits=limits)
    assert not outcome.ok
    assert outcome.limit_hit == "output"
    assert "larger than 65536 bytes of JSON" in outcome.error


# --- process lifecycle ---------------------------------------------------------------------


async def test_cancelling_a_run_kills_its_process(work_root: Path) -> None:
    async with DenoRuntime(limits=FAST, work_root=work_root) as runtime:
        marker = str(runtime._runs)
        task = asyncio.create_task(run(runtime, "while (true) {}"))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if live_processes_mentioning(marker):
                break
        else:
            pytest.fail("the run's process never started")
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert live_processes_mentioning(marker) == []
        assert list(runtime._runs.iterdir()) == []


async def test_runs_leave_nothing_behind(runtime: DenoRuntime) -> None:
    await run(runtime, "return 1;")
    assert list(runtime._runs.iterdir()) == []
    generated = runtime._deno_dir / "gen" / "file" / runtime._runs.relative_to("/")
    assert not generated.exists() or list(generated.iterdir()) == []


async def test_warm_pool_serves_runs_and_shares_nothing(work_root: Path, base_url: str) -> None:
    async with DenoRuntime(limits=FAST, work_root=work_root, pool_size=1) as runtime:
        await runtime.warm(base_url)
        first = await run(
            runtime, "(globalThis as any).leftover = 'secret';\nreturn Deno.pid;", base_url
        )
        await runtime.warm(base_url)
        second = await run(
            runtime, "return [Deno.pid, typeof (globalThis as any).leftover];", base_url
        )
        assert first.ok and second.ok
        assert first.warm and second.warm
        assert first.startup_seconds == 0
        pid, leftover = second.value  # type: ignore[misc]
        assert pid != first.value
        assert leftover == "undefined"
        assert not process_exists(first.value)  # type: ignore[arg-type]  # one process per run

        # A run for another address cannot use the pooled processes (their
        # permissions name the old address): it starts its own.
        other = await run(runtime, "return 1;", "http://127.0.0.1:9")
        assert other.ok
        assert not other.warm


async def test_a_failed_check_gives_the_process_back_to_the_pool(
    work_root: Path, base_url: str
) -> None:
    async with DenoRuntime(limits=FAST, work_root=work_root, pool_size=1) as runtime:
        await runtime.warm(base_url)
        bad = await run(runtime, "const n: number = 'x';\nreturn n;", base_url, check=True)
        assert bad.diagnostics
        good = await run(runtime, "return 1;", base_url)
        assert good.warm


async def test_a_bad_registry_address_fails_cleanly(runtime: DenoRuntime) -> None:
    outcome = await run(runtime, "return 1;", "ftp://example.com")
    assert not outcome.ok
    assert "is not an http(s) URL" in outcome.error


def test_limits_are_immutable_and_validated() -> None:
    limits = Limits()
    assert (limits.timeout_seconds, limits.heap_mb, limits.max_output_bytes) == (30, 128, 65536)
    with pytest.raises(ValueError, match="frozen"):
        limits.heap_mb = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="greater than 0"):
        Limits(timeout_seconds=0)


def test_folders_of_runtimes_that_were_never_closed_are_removed(work_root: Path) -> None:
    abandoned = work_root / "runtime-4999999-abandoned"  # above Linux's largest pid
    (abandoned / "runs").mkdir(parents=True)
    mine = work_root / f"runtime-{os.getpid()}-alive"
    mine.mkdir()
    runtime = DenoRuntime(limits=FAST, work_root=work_root)
    assert not abandoned.exists()
    assert mine.exists()
    asyncio.run(runtime.aclose())
