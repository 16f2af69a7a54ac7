"""`exec` (group "runtime", privileged): run a shell command in the workspace.

The command runs as `<shell> -c <command>` with its working folder confined to
the workspace (like file paths), stdin at /dev/null, and in a session and
process group of its own, so that it can be stopped as a whole:

- on its timeout (the `timeout` argument, or the caller's deadline if that
  comes first) the group gets SIGTERM, then SIGKILL after a short grace;
  grandchildren die with it. The result is a `timeout` failure that still
  carries the output so far;
- when the registry cancels the call (or the caller goes away) the group gets
  SIGKILL at once and the cancellation goes on;
- when the command exits, processes it left running in its group are stopped
  the same way: long-running processes belong in `background=true`, which
  starts a detached job whose output goes to `.toolwire/jobs/<id>.log` in the
  workspace (with a last line giving the exit status), and returns at once.

A command that ran to its end is a successful call whatever its exit code
(the code is in the output, text and structured: `exit_code`, `signal`,
`stdout`, `stderr`, `timed_out`, `duration`); only a timeout fails the call.

A process that leaves the group on purpose (`setsid`, daemons) escapes all
this; this is not a sandbox. Neither is the working folder: the command can
reach whatever the server's user can. Approval policies for commands are the
policy layer's job, not this module's.

The environment is minimal by default: PATH, HOME, LANG, LC_ALL, LC_CTYPE, TZ
and TMPDIR from the server's own, and nothing else (no credentials of the
server leak into commands). Pass `env=` to choose it exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from toolwire.declare import tool
from toolwire.models import ErrorCode, Runtime, SafetyTier, SandboxPlacement, ToolResult
from toolwire.policy.placement import Constraint, Sandboxing
from toolwire.tools import Tool, ToolContext
from toolwire.validation import ArgumentError
from toolwire.workspace import InvalidPathError, PathTraversalError, Workspace

__all__ = ["default_env", "exec_tools", "group_alive"]

DEFAULT_TIMEOUT_SECONDS = 180.0
MAX_TIMEOUT_SECONDS = 600.0
TOOL_TIMEOUT_SECONDS = MAX_TIMEOUT_SECONDS + 30.0
"""The tool's own (registry) timeout: above the largest `timeout` argument, with
room for the kill grace and the output drain."""
DEFAULT_MAX_OUTPUT_BYTES = 6 * 1024
"""Per stream: stdout and stderr together stay under the registry's default
16 KiB, so the structured output survives its truncation."""
DEFAULT_KILL_GRACE_SECONDS = 2.0
DRAIN_SECONDS = 1.0
JOBS_FOLDER = ".toolwire/jobs"
INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")

DESCRIPTION = (
    "Run a shell command (`sh -c`) in the workspace; returns its exit code, stdout and "
    "stderr.\n\n"
    "The command runs with no stdin and a minimal environment, in a process group of its own "
    "that is stopped when the command exits or times out: processes it leaves in the "
    "background do not survive it. Start long-running processes (servers, watchers) with "
    "background=true: that returns at once with a job id and a log file in the workspace to "
    "read with file_read. Long output keeps its beginning and its end."
)


def default_env() -> dict[str, str]:
    """The variables commands get by default: a few of the server's own."""
    env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    return env


def exec_tools(
    workspace: Workspace,
    *,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    shell: str = "/bin/sh",
    env: Mapping[str, str] | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE_SECONDS,
) -> list[Tool]:
    """The `exec` tool over `workspace`.

    Args:
        max_output_bytes: What is kept of stdout, and of stderr, each.
        shell: The shell that runs `<shell> -c <command>`.
        env: The commands' environment; `default_env()` when None.
        kill_grace: Seconds between SIGTERM and SIGKILL when a group is stopped.
    """
    runner = _Runner(
        workspace,
        shell=shell,
        env=dict(env) if env is not None else default_env(),
        max_output_bytes=max_output_bytes,
        kill_grace=kill_grace,
    )

    @tool(
        name="exec",
        description=DESCRIPTION,
        safety_tier=SafetyTier.PRIVILEGED,
        group="runtime",
        timeout_seconds=TOOL_TIMEOUT_SECONDS,
        command_argument="command",
    )
    async def exec_command(
        command: Annotated[str, Field(min_length=1)],
        context: ToolContext,
        workdir: str = ".",
        timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = DEFAULT_TIMEOUT_SECONDS,
        background: bool = False,
    ) -> ToolResult:
        """Args:
        command: The shell command line.
        workdir: Folder to run in, relative to the workspace root.
        timeout: Seconds before the command (and every process it started) is
            killed. Does not apply to background jobs.
        background: Start the command detached and return at once with a job
            id and the path of its log file.
        """
        memory = context.placement.memory_limit_bytes if context.placement else None
        argv = command_argv(runner.shell, command, memory)
        try:
            cwd = runner.workdir(workdir)
            if background:
                return runner.start_job(argv, cwd)
        except PathTraversalError as e:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, str(e))
        except InvalidPathError as e:
            raise ArgumentError(str(e)) from e
        return await runner.run(argv, cwd, timeout, context)

    return [dataclasses.replace(exec_command.tool, sandboxing=SANDBOXING)]


class _Runner:
    def __init__(
        self,
        workspace: Workspace,
        *,
        shell: str,
        env: dict[str, str],
        max_output_bytes: int,
        kill_grace: float,
    ) -> None:
        self.workspace = workspace
        self.shell = shell
        self.env = env
        self.max_output_bytes = max_output_bytes
        self.kill_grace = kill_grace

    def workdir(self, workdir: str) -> Path:
        real = self.workspace.resolve(workdir)
        if not real.exists():
            raise ArgumentError(f"no such folder: workdir {workdir!r}")
        if not real.is_dir():
            raise ArgumentError(f"workdir {workdir!r} is a file, not a folder")
        return real

    async def run(
        self, argv: list[str], cwd: Path, timeout: float, context: ToolContext
    ) -> ToolResult:
        limit, by_deadline = _limit(timeout, context.remaining())
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        out, err = _Capture(self.max_output_bytes), _Capture(self.max_output_bytes)
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: _Collect(loop, out, err),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=self.env,
                start_new_session=True,
            )
        )
        try:
            # Not cancelled halfway: asyncio would kill the shell alone and then
            # wait for pipes that its children hold open.
            transport, protocol = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            spawn.add_done_callback(_kill_spawned)
            raise
        group = transport.get_pid()  # a session leader leads its process group
        timed_out = False
        try:
            try:
                async with asyncio.timeout(limit):
                    await asyncio.shield(protocol.exited)
            except TimeoutError:
                timed_out = True
            leftovers = await _end_group(group, self.kill_grace)
            await _settle(transport, protocol)
        except asyncio.CancelledError:
            _signal(group, signal.SIGKILL)
            await _settle(transport, protocol)
            raise
        return _result(
            transport.get_returncode(),
            out,
            err,
            duration=time.monotonic() - started,
            timed_out=timed_out,
            leftovers=leftovers and not timed_out,
            why=f"the caller's deadline ({limit:.3g} s)"
            if by_deadline
            else f"its timeout of {timeout:g} s",
        )

    def start_job(self, argv: list[str], cwd: Path) -> ToolResult:
        job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        log_path = f"{JOBS_FOLDER}/{job_id}.log"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        log_fd = self.workspace.open(log_path, flags, 0o644, create_parents=True)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=self.env,
                start_new_session=True,
            )
        except BaseException:
            os.close(log_fd)
            raise
        threading.Thread(
            target=_watch_job,
            args=(proc, log_fd, job_id, started),
            name=f"toolwire-job-{job_id}",
            daemon=True,
        ).start()
        return ToolResult.ok(
            f"started background job {job_id} (pid {proc.pid}, its own process group)\n"
            f"output: {log_path} (read it with file_read; a last line gives the exit status "
            f"when the job ends)\n"
            f"to stop it: exec with command `kill -TERM -- -{proc.pid}`",
            {"job_id": job_id, "pid": proc.pid, "log_path": log_path, "background": True},
        )


SANDBOXING = Sandboxing(
    SandboxPlacement(runtime=Runtime.HOST, network=True), frozenset({Constraint.MEMORY})
)
"""On the host, with the host's network; the policy may cap its memory."""


def command_argv(shell: str, command: str, memory_bytes: int | None) -> list[str]:
    """The argv that runs `command`; with a memory cap, a first shell sets the
    address-space limit and then becomes the shell that runs the command, so
    the limit holds from the command's first instruction, for every process it
    starts (no pre-exec hook in a threaded server)."""
    if memory_bytes is None:
        return [shell, "-c", command]
    kib = max(1, memory_bytes // 1024)
    return [
        shell,
        "-c",
        'ulimit -v "$1" && exec "$2" -c "$3"',
        "toolwire-exec",
        str(kib),
        shell,
        command,
    ]


def _limit(timeout: float, remaining: float) -> tuple[float, bool]:
    """How long the command may run, and whether the caller's deadline (not
    the timeout argument) decided it: it stops a little before the deadline,
    so the output so far comes back instead of a bare timeout."""
    by_deadline = remaining - min(1.0, max(0.25, remaining * 0.2))
    if by_deadline < timeout:
        return max(by_deadline, 0.01), True
    return timeout, False


# --- output --------------------------------------------------------------------


class _Capture:
    """The beginning and the end of a stream, within `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        if self.total <= self.limit:
            return (self.head + self.tail).decode(errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        return (
            self.head.decode(errors="replace")
            + f"\n[… {omitted:,} bytes omitted of {self.total:,} …]\n"
            + self.tail.decode(errors="replace")
        )


class _Collect(asyncio.SubprocessProtocol):
    """Captures stdout and stderr; tells when the shell exited and when
    everything (the process and its pipes) is done."""

    def __init__(self, loop: asyncio.AbstractEventLoop, out: _Capture, err: _Capture) -> None:
        self.captures = {1: out, 2: err}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.captures[fd].add(data.encode() if isinstance(data, str) else data)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def _settle(transport: asyncio.SubprocessTransport, protocol: _Collect) -> None:
    """Reap the shell and read what is left in the pipes, within a bound (a
    process that escaped the group may hold a pipe open forever), then close."""
    await asyncio.wait([protocol.closed], timeout=DRAIN_SECONDS)
    if not protocol.exited.done():
        await asyncio.wait([protocol.exited], timeout=DRAIN_SECONDS)
    transport.close()


def _kill_spawned(spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Collect]]) -> None:
    """For a spawn whose call was cancelled meanwhile: kill what it started."""
    if spawn.cancelled() or spawn.exception() is not None:
        return
    transport, _ = spawn.result()
    _signal(transport.get_pid(), signal.SIGKILL)
    transport.close()


def _result(
    returncode: int | None,
    out: _Capture,
    err: _Capture,
    *,
    duration: float,
    timed_out: bool,
    leftovers: bool,
    why: str,
) -> ToolResult:
    exit_code: int | None = returncode
    killed_by: str | None = None
    if returncode is not None and returncode < 0:
        exit_code = None
        try:
            killed_by = signal.Signals(-returncode).name
        except ValueError:
            killed_by = f"signal {-returncode}"
    stdout, stderr = out.text(), err.text()
    structured: dict[str, Any] = {
        "exit_code": exit_code,
        "signal": killed_by,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": timed_out,
        "duration": round(duration, 3),
    }
    if exit_code is not None:
        status = f"exit code {exit_code}"
    else:
        status = f"killed by {killed_by}" if killed_by else "no exit status (still exiting)"
    lines = [f"{status} ({duration:.2f} s)"]
    if stdout:
        lines += ["--- stdout ---", stdout.removesuffix("\n")]
    if stderr:
        lines += ["--- stderr ---", stderr.removesuffix("\n")]
    if not (stdout or stderr):
        lines.append("(no output)")
    if leftovers:
        lines.append(
            "[processes the command left running were stopped; "
            "start long-running processes with background=true]"
        )
    text = "\n".join(lines)
    if timed_out:
        return ToolResult(
            success=False,
            error_code=ErrorCode.TIMEOUT,
            error=f"the command did not finish within {why}; its process group was killed",
            output=text,
            structured_output=structured,
        )
    return ToolResult.ok(text, structured)


# --- process groups ------------------------------------------------------------


def _signal(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


async def _end_group(group: int, grace: float) -> bool:
    """Stop every live process of the group: SIGTERM, then SIGKILL after
    `grace` seconds. True when there was something to stop."""
    if not group_alive(group):
        return False
    _signal(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    delay = 0.005
    while time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
        if not group_alive(group):
            return True
    _signal(group, signal.SIGKILL)
    for _ in range(100):
        if not group_alive(group):
            break
        await asyncio.sleep(0.01)
    return True


_PROC = Path("/proc")


def group_alive(group: int) -> bool:
    """Whether a process of the group is still running. Zombies do not count:
    an orphan is reaped by init, which (in a container) may never do it."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # not ours: the group id was reused
    if not _PROC.is_dir():
        return True
    with os.scandir(_PROC) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
                return True
    return False


def _watch_job(proc: subprocess.Popen[bytes], log_fd: int, job_id: str, started: float) -> None:
    """Reap a background job and append its exit status to its log."""
    try:
        code = proc.wait()
        seconds = time.monotonic() - started
        if code >= 0:
            status = f"exited with code {code}"
        else:
            try:
                status = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                status = f"was killed by signal {-code}"
        os.write(log_fd, f"\n[toolwire: job {job_id} {status} after {seconds:.1f} s]\n".encode())
    except OSError:
        pass
    finally:
        os.close(log_fd)
