"""`DenoRuntime`: run TypeScript that a model wrote, in a locked-down Deno process.

A run:

1. composes `user.ts` (the stubs, then the code wrapped in a default-exported
   async function) and type-checks it (`deno check`, cached by content) unless
   asked not to; a failed check is a failed outcome with diagnostics located
   in the code's own lines;
2. takes a Deno process that waits for its run (from the warm pool, or started
   now, while the check runs) whose permissions are: read its run folder,
   connect to the registry's `host:port`, nothing else (see `process.py`);
3. caps its memory beyond the heap flag (`memory.py`), writes `user.ts` into
   its run folder and hands it the run on stdin: the registry's address, the
   run's token, a nonce and the module's URL. The token never appears in argv
   or the environment;
4. reads the console (capped) and the result line, under the wall-clock
   timeout, which the host enforces by killing the process group;
5. removes the run folder; the process is never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .check import CheckResult, TypeChecker
from .memory import MemoryCgroup, data_limit
from .models import LimitHit, Limits, RunOutcome
from .pool import WarmPool
from .process import (
    Capture,
    DenoProcess,
    Folders,
    SandboxStartError,
    SpawnKey,
    net_permission,
    remove_emitted,
    run_command,
    spawn,
)
from .source import MAIN_FUNCTION, Source, compose

__all__ = ["DenoRuntime", "SandboxUnavailableError", "find_deno"]

_PACKAGE = Path(__file__).resolve().parent
_RUNNER = _PACKAGE / "runner.ts"
_REPOSITORY = _PACKAGE.parents[2]
_STACK_FRAME = re.compile(
    r"^\s*at (?:async )?(?:(?P<function>.+?) \((?P<where>[^()]+)\)|(?P<bare>\S+))\s*$"
)
_WHERE = re.compile(r"^(?P<url>.+):(?P<line>\d+):(?P<col>\d+)$")
_OOM_MARKERS = (
    "Fatal JavaScript out of memory",
    "Fatal process out of memory",
    "JavaScript heap out of memory",
    "Reached heap limit",
)
_CRASH_MARKERS = (b"<--- Last few GCs --->", b"#\n# Fatal", b"\n# Fatal")


class SandboxUnavailableError(Exception):
    """The sandbox cannot work here (no Deno, or no runner and bridge)."""


def find_deno() -> str:
    """The Deno binary: the `deno` PyPI package's, else `deno` on PATH."""
    with contextlib.suppress(ImportError):
        module = importlib.import_module("deno")
        find = getattr(module, "find_deno_bin", None)
        if callable(find):
            path = find()
            if path and Path(str(path)).exists():
                return str(path)
    found = shutil.which("deno")
    if found is None:
        raise SandboxUnavailableError(
            "Deno not found: install the `deno` package or put it on PATH"
        )
    return found


class DenoRuntime:
    """Runs code in Deno with explicit permissions only; one process per run.

    `work_root` holds the runtime's folders: a DENO_DIR shared by every run (type
    check and compile caches; the code cannot write to it) and a folder of its
    own for run folders and checks. `pool_size` processes are kept started and
    waiting (0: start one per run).
    """

    def __init__(
        self,
        *,
        deno_bin: str | None = None,
        limits: Limits = Limits(),  # noqa: B008 - immutable
        work_root: Path | None = None,
        pool_size: int = 0,
        deno_config: Path | None = None,
        check_cache_size: int = 256,
    ) -> None:
        self.limits = limits
        self._deno = deno_bin or find_deno()
        self._config = (deno_config or _REPOSITORY / "deno.json").resolve()
        for needed in (_RUNNER, self._config, _REPOSITORY / "clients" / "deno" / "bridge.ts"):
            if not needed.exists():
                raise SandboxUnavailableError(
                    f"the Deno sandbox needs {needed} (it runs from a toolwire checkout)"
                )
        root = work_root or Path(tempfile.gettempdir()) / f"toolwire-sandbox-{os.getuid()}"
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._root = root.resolve()
        owner = self._root.stat().st_uid
        if owner != os.getuid():
            # A shared temporary folder: someone else's folder here is not ours to use.
            raise SandboxUnavailableError(f"{self._root} belongs to another user (uid {owner})")
        self._deno_dir = self._root / "deno-dir"
        self._deno_dir.mkdir(mode=0o700, exist_ok=True)
        _remove_abandoned_homes(self._root)
        self._home = Path(tempfile.mkdtemp(prefix=f"runtime-{os.getpid()}-", dir=self._root))
        self._runs = self._home / "runs"
        self._runs.mkdir(mode=0o700)
        self._run_dirs = Folders(self._runs, "run-")
        self._env = {
            "DENO_DIR": str(self._deno_dir),
            "DENO_NO_UPDATE_CHECK": "1",
            "DENO_NO_PROMPT": "1",
            "NO_COLOR": "1",
        }
        self._checker = TypeChecker(self._deno, self._home, self._env, cache_size=check_cache_size)
        self._pool = WarmPool(pool_size, self._spawn, self._discard, self._forget)
        self._closed = False

    @property
    def deno_bin(self) -> str:
        return self._deno

    def command(self, base_url: str, run_dir: Path, limits: Limits | None = None) -> list[str]:
        """The `deno run` command line a run gets (for reports and tests)."""
        limits = limits or self.limits
        key = SpawnKey(net_permission(base_url), limits.heap_mb)
        return run_command(self._deno, _RUNNER, self._config, run_dir, key)

    async def warm(self, base_url: str, limits: Limits | None = None) -> None:
        """Fill the warm pool for runs against `base_url` (no-op when pool_size is 0)."""
        limits = limits or self.limits
        key = SpawnKey(net_permission(base_url), limits.heap_mb)
        await self._pool.fill(key, limits.startup_timeout_seconds)

    async def aclose(self) -> None:
        """Stop the pooled processes and remove the runtime's folder."""
        self._closed = True
        await self._pool.aclose()
        shutil.rmtree(self._home, ignore_errors=True)

    async def __aenter__(self) -> DenoRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def run(
        self,
        code: str,
        *,
        stubs: str,
        base_url: str,
        token: str,
        check: bool = True,
        limits: Limits | None = None,
    ) -> RunOutcome:
        """Run `code` (a function body: top-level `await` and `return` work) with
        `stubs` before it; never raises, except when cancelled (which kills the run)."""
        started = time.perf_counter()
        limits = limits or self.limits
        source = compose(code, stubs)

        def failed(error: str, **fields: Any) -> RunOutcome:
            return RunOutcome(
                ok=False,
                error=error,
                duration_seconds=time.perf_counter() - started,
                **fields,
            )

        if self._closed:
            return failed("the sandbox runtime is closed")
        try:
            key = SpawnKey(net_permission(base_url), limits.heap_mb)
        except ValueError as error:
            return failed(str(error))

        # Start (or take) the process while the check runs: it waits for its run.
        acquiring = asyncio.ensure_future(self._pool.acquire(key, limits.startup_timeout_seconds))
        handed_over = False
        try:
            checked: CheckResult | None = None
            if check:
                checked = await self._checker.check(source, limits.check_timeout_seconds)
                timings = {"check_seconds": checked.seconds, "check_cached": checked.cached}
                if not checked.passed:
                    if checked.error:
                        return failed(checked.error, **timings)
                    count = len(checked.diagnostics)
                    return failed(
                        f"the code does not type-check ({count} error{'s' * (count != 1)})",
                        diagnostics=list(checked.diagnostics),
                        **timings,
                    )
            try:
                process, warm = await acquiring
            except SandboxStartError as error:
                return failed(str(error))
            handed_over = True
            try:
                return await self._execute(
                    process, warm, source, base_url, token, limits, started, checked
                )
            except Exception as error:  # the machine (a full disk) or a bug: still an outcome
                return failed(f"the sandbox failed: {error!r}")
        finally:
            if not handed_over:
                await self._give_back(acquiring)
            if not self._closed:
                self._pool.refill()

    # --- one run ---------------------------------------------------------------------

    async def _execute(
        self,
        process: DenoProcess,
        warm: bool,
        source: Source,
        base_url: str,
        token: str,
        limits: Limits,
        started: float,
        checked: CheckResult | None,
    ) -> RunOutcome:
        module = process.run_dir / "user.ts"
        module_url = module.as_uri()
        nonce = secrets.token_hex(16)
        cgroup: MemoryCgroup | None = None
        killed_by: list[LimitHit] = []

        def stop(reason: LimitHit) -> None:
            if not killed_by:
                killed_by.append(reason)
            process.kill()

        capture = Capture(
            nonce.encode(),
            limits.max_output_bytes,
            limits.max_value_bytes,
            lambda: stop("output"),
        )
        proc = process.process
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        execute_started = time.perf_counter()
        try:
            module.write_text(source.text)
            caps = [f"V8 heap: {limits.heap_mb} MiB"]
            if limits.memory_mb is not None:
                caps.append(data_limit(process.pid, limits.memory_mb))
                if limits.cgroup:
                    created = MemoryCgroup.create(limits.memory_mb)
                    if isinstance(created, str):
                        caps.append(f"no cgroup cap ({created})")
                    else:
                        cgroup = created
                        caps.append(cgroup.add(process.pid))
            elif limits.cgroup:
                caps.append("no cgroup cap (memory_mb is None)")

            config = {"baseUrl": base_url, "token": token, "nonce": nonce, "module": module_url}
            execute_started = time.perf_counter()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(json.dumps(config).encode() + b"\n")
                await proc.stdin.drain()
                proc.stdin.close()
            watch = asyncio.gather(
                capture.pump(proc.stdout, False), capture.pump(proc.stderr, True), proc.wait()
            )
            try:
                await asyncio.wait_for(watch, limits.timeout_seconds)
            except TimeoutError:
                stop("timeout")
            process.kill()
            await proc.wait()
            execute_seconds = time.perf_counter() - execute_started
            oom_killed = cgroup.oom_killed() if cgroup is not None else False
        finally:
            process.kill()
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    await asyncio.shield(proc.wait())
            if cgroup is not None:
                cgroup.remove()
            self._release_dir(process.run_dir)

        return _outcome(
            capture=capture,
            source=source,
            module_url=module_url,
            limits=limits,
            killed_by=killed_by[0] if killed_by else None,
            oom_killed=oom_killed,
            exit_code=proc.returncode,
            timings={
                "duration_seconds": time.perf_counter() - started,
                "check_seconds": checked.seconds if checked else 0.0,
                "check_cached": checked.cached if checked else False,
                "startup_seconds": 0.0 if warm else process.startup_seconds,
                "execute_seconds": execute_seconds,
                "warm": warm,
                "memory_cap": "; ".join(caps),
                "exit_code": proc.returncode,
            },
        )

    # --- processes -------------------------------------------------------------------

    async def _spawn(self, key: SpawnKey, timeout: float) -> DenoProcess:
        run_dir = self._run_dirs.take()
        try:
            return await spawn(self._deno, _RUNNER, self._config, run_dir, self._env, key, timeout)
        except BaseException:
            self._release_dir(run_dir)
            raise

    async def _discard(self, process: DenoProcess) -> None:
        await process.stop()
        self._release_dir(process.run_dir)

    def _forget(self, process: DenoProcess) -> None:
        process.kill()
        self._release_dir(process.run_dir)

    def _release_dir(self, run_dir: Path) -> None:
        remove_emitted(run_dir, self._deno_dir)
        self._run_dirs.give(run_dir)

    async def _give_back(self, acquiring: asyncio.Future[tuple[DenoProcess, bool]]) -> None:
        """A process acquired for a run that will not happen goes back to the pool."""
        if not acquiring.done():
            acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await acquiring
            return
        if acquiring.cancelled() or acquiring.exception() is not None:
            return
        process, _ = acquiring.result()
        await self._pool.release(process)


def _remove_abandoned_homes(root: Path) -> None:
    """Remove the folders of runtimes whose process is gone (never closed)."""
    for home in root.glob("runtime-*-*"):
        pid = home.name.split("-")[1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(home, ignore_errors=True)
        except PermissionError:
            pass


# --- outcomes ------------------------------------------------------------------------


def _outcome(
    *,
    capture: Capture,
    source: Source,
    module_url: str,
    limits: Limits,
    killed_by: LimitHit | None,
    oom_killed: bool,
    exit_code: int | None,
    timings: dict[str, Any],
) -> RunOutcome:
    stderr_tail = capture.stderr_tail.decode("utf-8", errors="replace")
    crashed_oom = any(marker in stderr_tail for marker in _OOM_MARKERS)
    stderr = capture.stored_stderr()
    crash_at = min((at for m in _CRASH_MARKERS if (at := stderr.find(m)) >= 0), default=None)
    console = capture.console_text(crash_at).rstrip() if crash_at is not None else None
    if console is None:
        console = capture.console_text()
    if capture.console_overflow:
        console += f"\n[console output cut at {limits.max_output_bytes} bytes]"

    def failed(error: str, limit: LimitHit | None = None) -> RunOutcome:
        return RunOutcome(ok=False, error=error, limit_hit=limit, console=console, **timings)

    if killed_by == "timeout":
        return failed(
            f"the code did not finish within {limits.timeout_seconds:g} s and was stopped",
            "timeout",
        )
    if crashed_oom or oom_killed:
        return failed(_memory_error(stderr_tail, limits, oom_killed), "memory")
    if killed_by == "output" and capture.value_overflow:
        return failed(
            f"the code's return value is larger than {limits.max_value_bytes} bytes of JSON; "
            "return less (a summary, or the first items)",
            "output",
        )
    if killed_by == "output":
        return failed(
            f"the code printed more than {limits.max_output_bytes} bytes of console output "
            "and was stopped; print less (a summary, or the first items)",
            "output",
        )

    line = capture.result_line()
    if line is None:
        detail = source.relocate(stderr_tail.strip(), module_url)
        if exit_code is not None and exit_code >= 0 and "error: Uncaught" not in detail:
            status = f" (exit status {exit_code})" if exit_code else ""
            return failed(f"the code exited before returning (Deno.exit?){status}")
        how = f"signal {-exit_code}" if exit_code is not None and exit_code < 0 else exit_code
        message = f"the sandbox process ended ({how}) before the code returned"
        return failed(f"{message}: {_last_lines(detail)}" if detail else message)
    try:
        result = json.loads(line)
    except ValueError:
        return failed("the sandbox's result line is not JSON (the runner broke)")
    if result.get("ok") is True:
        return RunOutcome(ok=True, value=result.get("value"), console=console, **timings)
    error = result.get("error") or {}
    message = _format_error(error, source, module_url)
    if error.get("name") == "RangeError" and "Array buffer allocation failed" in str(
        error.get("message")
    ):
        return failed(
            f"{message}\n(the run's memory cap is {limits.memory_mb} MiB beyond start-up)",
            "memory",
        )
    return failed(message)


def _memory_error(stderr_tail: str, limits: Limits, oom_killed: bool) -> str:
    if oom_killed:
        return (
            f"the code used more than its {limits.memory_mb} MiB memory cgroup and was "
            "killed by the kernel"
        )
    fatal = next(
        (line.strip("# ").strip() for line in stderr_tail.splitlines() if "Fatal" in line), ""
    )
    return (
        f"the code ran out of memory (V8 heap limit {limits.heap_mb} MiB, "
        f"memory cap {limits.memory_mb} MiB beyond start-up)" + (f": {fatal}" if fatal else "")
    )


def _format_error(error: dict[str, Any], source: Source, module_url: str) -> str:
    """`Name [code]: message`, then the stack frames that are in the code."""
    name = str(error.get("name") or "Error")
    raw_message = str(error.get("message") or "")
    stack = str(error.get("stack") or "")
    # The stack repeats the message first; the frames come after it.
    stack = stack.removeprefix(f"{name}: {raw_message}").removeprefix(name)
    if name == "TypeError" and raw_message.startswith("SyntaxError: "):
        # Deno reports a module that does not parse as a TypeError wrapping it.
        name, raw_message = "SyntaxError", raw_message.removeprefix("SyntaxError: ")
    message = source.relocate(raw_message, module_url)
    code = error.get("code")
    head = f"{name} [{code}]: {message}" if code else f"{name}: {message}"
    frames = []
    for line in stack.splitlines():
        frame = _STACK_FRAME.match(line)
        if frame is None:
            continue
        where = _WHERE.match(frame["where"] or frame["bare"] or "")
        if where is None or where["url"] != module_url:
            continue
        function = frame["function"] or ""
        function = function.removeprefix("Module.").removeprefix("Object.")
        line_no = int(where["line"])
        user_line = source.code_line(line_no)
        if user_line is None:
            place = source.where(line_no)
            frames.append(f"    at {function or 'a tool stub'} ({place})")
        elif function in ("", MAIN_FUNCTION):
            frames.append(f"    at line {user_line}:{where['col']}")
        else:
            frames.append(f"    at {function} (line {user_line}:{where['col']})")
    return "\n".join([head, *frames])


def _last_lines(text: str, count: int = 12) -> str:
    lines = text.splitlines()
    return "\n".join(lines[-count:])
