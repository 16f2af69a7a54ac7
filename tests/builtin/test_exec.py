"""`exec` through `ToolRegistry.dispatch`: output, limits, and process groups
that die whole (grandchildren too) on timeout, on cancellation and at exit."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.builtin.exec import MAX_TIMEOUT_SECONDS, exec_tools
from toolwire.builtin.files import file_tools
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.workspace import Workspace


def survivors(group: int) -> list[int]:
    """Live (not zombie) processes of a process group. Zombies are dead: an
    orphan waits for init to reap it, which in a container may never happen."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return []
        return [group]
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            data = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            alive.append(int(entry.name))
    return alive


async def wait_dead(group: int, seconds: float = 2.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if not survivors(group):
            return
        await asyncio.sleep(0.02)
    assert survivors(group) == [], f"processes of group {group} survived"


def text_of(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def wait_for_file(path: Path, seconds: float = 5.0, containing: str = "") -> str:
    for _ in range(int(seconds / 0.02)):
        text = text_of(path)
        if text and containing in text:
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} did not appear (with {containing!r})")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def make_registry(ws: Workspace, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    for t in [*exec_tools(ws, **options), *file_tools(ws)]:
        registry.register(t)
    return registry


@pytest.fixture
def registry(ws: Workspace) -> Iterator[ToolRegistry]:
    registry = make_registry(ws, kill_grace=0.5)
    yield registry
    registry.close()


async def run(registry: ToolRegistry, command: str, **arguments: Any) -> ToolResult:
    return await registry.dispatch("exec", {"command": command, **arguments})


def test_definition() -> None:
    (definition,) = [t.definition for t in exec_tools(Workspace(Path("/tmp/toolwire-ws")))]
    assert definition.name == "exec"
    assert definition.safety_tier is SafetyTier.PRIVILEGED
    assert definition.group == "runtime"
    assert definition.timeout_seconds is not None
    assert definition.timeout_seconds > MAX_TIMEOUT_SECONDS
    assert definition.input_schema is not None
    timeout = definition.input_schema["properties"]["timeout"]
    assert timeout["maximum"] == MAX_TIMEOUT_SECONDS and timeout["default"] == 180
    assert definition.input_schema["required"] == ["command"]


async def test_stdout_stderr_and_exit_code(registry: ToolRegistry) -> None:
    result = await run(registry, "echo out; echo err >&2; exit 3")
    assert result.success
    assert result.structured_output["exit_code"] == 3
    assert result.structured_output["stdout"] == "out\n"
    assert result.structured_output["stderr"] == "err\n"
    assert result.structured_output["timed_out"] is False
    assert result.output.splitlines()[1:] == ["--- stdout ---", "out", "--- stderr ---", "err"]
    assert result.output.startswith("exit code 3 (")
    quiet = await run(registry, "true")
    assert quiet.output.endswith("(no output)")


async def test_output_is_capped_keeping_its_beginning_and_end(ws: Workspace) -> None:
    registry = make_registry(ws, max_output_bytes=1000)
    command = "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"
    result = await run(registry, command)
    stdout = result.structured_output["stdout"]
    assert stdout.startswith("BEGIN\n") and stdout.endswith("END\n")
    assert "bytes omitted of 100,011" in stdout
    assert len(stdout) < 1100


async def test_stdin_is_closed_and_the_environment_minimal(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TEST_SECRET", "hunter2")
    registry = make_registry(ws)
    result = await run(registry, 'cat; echo "[${TOOLWIRE_TEST_SECRET-unset}]"; echo "$PATH"')
    lines = result.structured_output["stdout"].splitlines()
    assert lines[0] == "[unset]"
    assert lines[1] == os.environ["PATH"]
    custom = make_registry(ws, env={"GREETING": "hi"})
    assert (await run(custom, 'echo "$GREETING"')).structured_output["stdout"] == "hi\n"


async def test_workdir_is_confined_to_the_workspace(registry: ToolRegistry, ws: Workspace) -> None:
    (ws.root / "sub").mkdir()
    result = await run(registry, "pwd", workdir="sub")
    assert result.structured_output["stdout"] == f"{ws.root / 'sub'}\n"
    assert (await run(registry, "pwd")).structured_output["stdout"] == f"{ws.root}\n"
    denied = await run(registry, "pwd", workdir="../..")
    assert denied.error_code is ErrorCode.DENIED_BY_POLICY
    assert denied.error.startswith("path traversal denied: '../..'")
    missing = await run(registry, "pwd", workdir="nope")
    assert missing.error_code is ErrorCode.INVALID_ARGUMENTS and "no such folder" in missing.error
    nul = await run(registry, "pwd", workdir="a\x00")
    assert nul.error_code is ErrorCode.INVALID_ARGUMENTS and "NUL byte" in nul.error


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"command": ""}, "'command'"),
        ({"command": "true", "timeout": 0}, "'timeout'"),
        ({"command": "true", "timeout": 601}, "'timeout'"),
        ({}, "missing required field 'command'"),
    ],
)
async def test_bad_arguments(
    registry: ToolRegistry, arguments: dict[str, Any], problem: str
) -> None:
    result = await registry.dispatch("exec", arguments)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert problem in result.error


async def test_the_timeout_argument_kills_the_whole_group(registry: ToolRegistry) -> None:
    started = time.monotonic()
    result = await run(registry, "echo $$; sleep 100 & sleep 100", timeout=0.3)
    assert time.monotonic() - started < 3
    assert result.error_code is ErrorCode.TIMEOUT
    assert result.error == (
        "the command did not finish within its timeout of 0.3 s; its process group was killed"
    )
    assert result.structured_output["timed_out"] is True
    assert result.structured_output["exit_code"] is None
    group = int(result.structured_output["stdout"])
    await wait_dead(group)


async def test_the_callers_deadline_stops_the_command_with_its_output_so_far(
    registry: ToolRegistry,
) -> None:
    result = await registry.dispatch(
        "exec", {"command": "echo $$; echo started; sleep 100 & sleep 100"}, timeout=1.0
    )
    assert result.error_code is ErrorCode.TIMEOUT
    assert "the caller's deadline" in result.error
    assert "started" in result.output
    await wait_dead(int(result.structured_output["stdout"].split()[0]))


async def test_cancellation_by_the_registry_kills_the_group(ws: Workspace) -> None:
    # The group ignores SIGTERM and the kill grace is long, so the registry's
    # deadline cancels the handler mid-kill: the group must get SIGKILL.
    registry = make_registry(ws, kill_grace=30)
    command = "trap '' TERM; echo $$ > pid; sleep 100 & sleep 100"
    started = time.monotonic()
    result = await registry.dispatch("exec", {"command": command}, timeout=0.5)
    assert time.monotonic() - started < 3
    assert result.error_code is ErrorCode.TIMEOUT
    assert result.error == "tool 'exec' did not finish within 0.5 s and was cancelled"
    await wait_dead(int((ws.root / "pid").read_text()))


async def test_cancellation_by_the_caller_kills_the_group(
    registry: ToolRegistry, ws: Workspace
) -> None:
    task = asyncio.ensure_future(run(registry, "echo $$ > pid; sleep 100 & sleep 100"))
    group = int(await wait_for_file(ws.root / "pid", containing="\n"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_dead(group)


def running(marker: str) -> list[int]:
    """Live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("ticks", [0, 1, 2, 4, 8])
async def test_cancellation_while_the_command_starts_leaves_nothing_running(
    registry: ToolRegistry, ticks: int
) -> None:
    marker = f"100.{secrets.randbelow(10**6):06d}"
    task = asyncio.ensure_future(run(registry, f"sleep {marker} & sleep {marker}"))
    for _ in range(ticks):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if not running(marker):
            break
        await asyncio.sleep(0.02)
    assert running(marker) == []


async def test_processes_left_running_are_stopped_when_the_command_exits(
    registry: ToolRegistry,
) -> None:
    started = time.monotonic()
    result = await run(registry, "echo $$; sleep 100 &")
    assert time.monotonic() - started < 3
    assert result.success and result.structured_output["exit_code"] == 0
    assert "left running were stopped" in result.output
    await wait_dead(int(result.structured_output["stdout"]))


async def test_background_jobs_log_to_the_workspace(registry: ToolRegistry, ws: Workspace) -> None:
    result = await run(registry, "echo $$; echo hello; sleep 0.2; echo bye >&2", background=True)
    assert result.success, result.error
    job = result.structured_output
    assert job["log_path"] == f".toolwire/jobs/{job['job_id']}.log"
    assert job["background"] is True
    assert f"pid {job['pid']}" in result.output
    log = await wait_for_file(ws.root / job["log_path"], containing="[toolwire: job")
    assert log.startswith(f"{job['pid']}\nhello\nbye\n")
    assert f"[toolwire: job {job['job_id']} exited with code 0 after " in log
    read = await registry.dispatch("file_read", {"path": job["log_path"]})
    assert read.success and "hello" in read.output
    await wait_dead(job["pid"])


async def test_background_jobs_refuse_a_log_folder_linked_outside(
    registry: ToolRegistry, ws: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (ws.root / ".toolwire").symlink_to(tmp_path / "elsewhere")
    result = await run(registry, "echo hi", background=True)
    assert result.error_code is ErrorCode.DENIED_BY_POLICY
    assert result.error.startswith("path traversal denied:")
    assert list((tmp_path / "elsewhere").iterdir()) == []
