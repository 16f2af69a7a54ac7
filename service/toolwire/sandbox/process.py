"""One Deno process per run: how it is started, handed its run, watched and read.

The command line (see `run_command`) grants the process exactly two things:
reading its own run folder (where `user.ts` is written) and connecting to the
registry's HTTP address. The trusted runner and its static imports (the bridge,
the generated client, `node_modules`) need no permission at all, since Deno does
not check the static import graph of the entrypoint; the user's module is
imported dynamically, which is checked, hence the read grant on the run folder.

A started process prints READY and waits for its run on stdin; until then it
has loaded no user code, so it can be started ahead of time (the warm pool)
without sharing anything between runs: each process serves exactly one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "READY",
    "Capture",
    "DenoProcess",
    "Folders",
    "SandboxStartError",
    "SpawnKey",
    "kill_group",
    "net_permission",
    "remove_emitted",
    "run_command",
    "spawn",
]

READY = b"TOOLWIRE_RUNNER_READY\n"
_STDERR_TAIL = 16 * 1024
_READ_SIZE = 64 * 1024


class SandboxStartError(Exception):
    """Deno did not start (or the runner failed before waiting for its run)."""


@dataclass(frozen=True)
class SpawnKey:
    """What is fixed when a process starts (its permissions and heap)."""

    net: str | None
    """The one `host:port` it may connect to; None: no network at all."""
    heap_mb: int


@dataclass
class DenoProcess:
    process: asyncio.subprocess.Process
    run_dir: Path
    key: SpawnKey
    startup_seconds: float
    loop: asyncio.AbstractEventLoop = field(repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    def kill(self) -> None:
        """SIGKILL the whole process group (it is a session of its own)."""
        if self.process.returncode is None:
            kill_group(self.process.pid)

    async def stop(self) -> None:
        self.kill()
        with contextlib.suppress(ProcessLookupError):
            await self.process.wait()


class Folders:
    """Fresh folders under `parent` whose names are recycled: `run-0`, `run-1`, ….

    Each folder is created empty when taken and removed when given back, so no
    run sees another's files. Recycling the names matters for DENO_DIR, which
    Deno keys by module URL: its code and dependency caches get one entry per
    folder name, bounded by how many runs overlap, instead of one per run.
    """

    def __init__(self, parent: Path, prefix: str) -> None:
        self._parent = parent
        self._prefix = prefix
        self._free: list[int] = []
        self._count = 0
        self._taken: set[Path] = set()

    def take(self) -> Path:
        number = self._free.pop() if self._free else self._next()
        path = self._parent / f"{self._prefix}{number}"
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(mode=0o700)
        self._taken.add(path)
        return path

    def give(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
        if path in self._taken:
            self._taken.remove(path)
            self._free.append(int(path.name.removeprefix(self._prefix)))

    def _next(self) -> int:
        self._count += 1
        return self._count - 1


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def remove_emitted(run_dir: Path, deno_dir: Path) -> None:
    """Remove what Deno emitted for a run's folder (the transpiled `user.ts` in
    DENO_DIR/gen)."""
    shutil.rmtree(deno_dir / "gen" / "file" / run_dir.relative_to("/"), ignore_errors=True)


def net_permission(base_url: str) -> str | None:
    """The `host:port` of the registry's HTTP address, exactly as `--allow-net` takes it."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the registry address {base_url!r} is not an http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise ValueError(f"the registry address {base_url!r} has a bad port") from error
    host = parts.hostname
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def run_command(
    deno_bin: str, runner: Path, config: Path, run_dir: Path, key: SpawnKey
) -> list[str]:
    """The `deno run` command line of a sandboxed process."""
    return [
        deno_bin,
        "run",
        "--quiet",
        "--no-prompt",  # a missing permission throws NotCapable, never asks
        "--no-remote",
        "--cached-only",
        "--no-lock",
        "--deny-import",  # no remote module hosts, not even Deno's default list
        # The repository's deno.json (nodeModulesDir "manual") resolves the npm
        # packages of the bridge from the repository's node_modules, offline.
        f"--config={config}",
        f"--allow-read={run_dir}",
        f"--allow-net={key.net}" if key.net else "--deny-net",
        "--deny-write",
        "--deny-env",
        "--deny-run",
        "--deny-ffi",
        "--deny-sys",
        f"--v8-flags=--max-old-space-size={key.heap_mb}",
        str(runner),
    ]


async def spawn(
    deno_bin: str,
    runner: Path,
    config: Path,
    run_dir: Path,
    env: Mapping[str, str],
    key: SpawnKey,
    timeout: float,
) -> DenoProcess:
    """Start a process for `key` in `run_dir` and wait until it waits for its run."""
    started = time.perf_counter()
    process: asyncio.subprocess.Process | None = None
    try:
        process = await asyncio.create_subprocess_exec(
            *run_command(deno_bin, runner, config, run_dir, key),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=run_dir,
            env=dict(env),
            start_new_session=True,
        )
        assert process.stdout is not None and process.stderr is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), timeout)
        except TimeoutError:
            raise SandboxStartError(f"Deno did not start within {timeout:g} s") from None
        if line != READY:
            kill_group(process.pid)
            with contextlib.suppress(TimeoutError):
                error = await asyncio.wait_for(process.stderr.read(_STDERR_TAIL), 2)
            detail = (line + error).decode("utf-8", errors="replace").strip()
            raise SandboxStartError(f"Deno failed to start: {detail or 'no output'}")
        return DenoProcess(
            process, run_dir, key, time.perf_counter() - started, asyncio.get_running_loop()
        )
    except BaseException:
        if process is not None:
            if process.returncode is None:
                kill_group(process.pid)
            with contextlib.suppress(ProcessLookupError):
                await process.wait()
        raise


class Capture:
    """Reads a run's stdout and stderr: the console (capped), the result line
    (after the nonce), and a tail of stderr for diagnosing crashes."""

    def __init__(
        self, nonce: bytes, max_console: int, max_value: int, on_limit: Callable[[], None]
    ) -> None:
        self._nonce = nonce
        self._max_console = max_console
        self._max_value = max_value
        self._on_limit = on_limit
        self._pending = b""
        self.chunks: list[tuple[bool, bytes]] = []
        """Console output as it arrived: (from stderr, bytes)."""
        self.stored = 0
        self.console_overflow = False
        self.value_overflow = False
        self.result: bytearray | None = None
        self.stderr_tail = bytearray()

    async def pump(self, stream: asyncio.StreamReader, is_stderr: bool) -> None:
        while chunk := await stream.read(_READ_SIZE):
            self.feed(chunk, is_stderr)
        if not is_stderr:
            self._console(self._pending, False)
            self._pending = b""

    def feed(self, data: bytes, is_stderr: bool) -> None:
        if is_stderr:
            self.stderr_tail += data
            del self.stderr_tail[:-_STDERR_TAIL]
            self._console(data, True)
            return
        if self.result is not None:
            self._add_result(data)
            return
        buffer = self._pending + data
        at = buffer.find(self._nonce)
        if at >= 0:
            self._console(buffer[:at], False)
            self._pending = b""
            self.result = bytearray()
            self._add_result(buffer[at + len(self._nonce) :])
            return
        # Hold back an end that could be the start of the nonce, nothing more
        # (what is held back would arrive after later stderr output).
        keep = next(
            (
                k
                for k in range(min(len(self._nonce) - 1, len(buffer)), 0, -1)
                if buffer.endswith(self._nonce[:k])
            ),
            0,
        )
        self._console(buffer[: len(buffer) - keep], False)
        self._pending = buffer[len(buffer) - keep :]

    def result_line(self) -> bytes | None:
        if self.result is None:
            return None
        line, newline, _ = bytes(self.result).partition(b"\n")
        return line if newline else None

    def console_text(self, stderr_cut: int | None = None) -> str:
        """The console, without stderr from offset `stderr_cut` on (a crash report)."""
        parts: list[bytes] = []
        seen = 0
        for is_stderr, data in self.chunks:
            if is_stderr and stderr_cut is not None:
                keep = max(0, min(len(data), stderr_cut - seen))
                seen += len(data)
                data = data[:keep]
            parts.append(data)
        return b"".join(parts).decode("utf-8", errors="replace")

    def stored_stderr(self) -> bytes:
        return b"".join(data for is_stderr, data in self.chunks if is_stderr)

    def _add_result(self, data: bytes) -> None:
        assert self.result is not None
        self.result += data
        if len(self.result) > self._max_value + 64 and not self.value_overflow:
            self.value_overflow = True
            self._on_limit()

    def _console(self, data: bytes, is_stderr: bool) -> None:
        if not data or self.console_overflow:
            return
        room = self._max_console - self.stored
        if len(data) > room:
            data = data[:room]
            self.console_overflow = True
        if data:
            self.chunks.append((is_stderr, bytes(data)))
            self.stored += len(data)
        if self.console_overflow:
            self._on_limit()
