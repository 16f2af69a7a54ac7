"""Type-checking the user's module with `deno check`, cached by content.

`deno check` runs with no configuration file, no npm, no remote modules, and an
import map that sends every `file:` specifier to a folder that does not exist:
the checker runs outside the sandbox's permissions, so without the map an
`import("/some/file.json")` in the code would have the checker read that file
and describe its contents in a diagnostic. The module needs no imports anyway
(the stubs are self-contained and `__callTool__` is a declared global).

The result of a check (pass, or the diagnostics) is kept in a small LRU keyed by
the SHA-256 of the module, so checking the same stubs and code again is free;
concurrent checks of the same module share one `deno check`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .process import Folders
from .source import Source

__all__ = ["CheckResult", "TypeChecker", "parse_diagnostics"]

_NO_IMPORTS = "file:///toolwire-sandbox-no-imports/"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_HEADER = re.compile(r"^(?P<code>TS\d+) \[(?P<severity>ERROR|WARN|WARNING)\]: (?P<message>.*)$")
_AT = re.compile(r"^\s*at (?P<location>\S+)$")
_MARKER = re.compile(r"^\s*[~^]+\s*$")
_SUMMARY = re.compile(r"^(Found \d+ errors?\.|error: Type checking failed\.|Check \S+)$")
_NOISE = re.compile(r"^Stack backtrace:|^\s+\d+: <unknown>$")


@dataclass(frozen=True)
class CheckResult:
    diagnostics: tuple[str, ...]
    """Empty when the module type-checks."""
    seconds: float
    cached: bool = False
    error: str = ""
    """Set when the check itself could not run (then `diagnostics` is empty)."""

    @property
    def passed(self) -> bool:
        return not self.diagnostics and not self.error


class TypeChecker:
    def __init__(
        self,
        deno_bin: str,
        work_dir: Path,
        env: Mapping[str, str],
        *,
        cache_size: int = 256,
    ) -> None:
        self._deno = deno_bin
        checks = work_dir / "checks"
        checks.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._folders = Folders(checks, "check-")
        self._import_map = work_dir / "check-import-map.json"
        self._import_map.write_text(json.dumps({"imports": {"file:///": _NO_IMPORTS}}) + "\n")
        self._env = dict(env)
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._cache_size = cache_size
        self._inflight: dict[str, asyncio.Future[CheckResult]] = {}

    async def check(self, source: Source, timeout: float) -> CheckResult:
        started = time.perf_counter()
        cached = self._cache.get(source.digest)
        if cached is not None:
            self._cache.move_to_end(source.digest)
            return CheckResult(cached, time.perf_counter() - started, cached=True)
        inflight = self._inflight.get(source.digest)
        if inflight is not None:
            result = await asyncio.shield(inflight)
            return CheckResult(
                result.diagnostics, time.perf_counter() - started, cached=True, error=result.error
            )
        future: asyncio.Future[CheckResult] = asyncio.get_running_loop().create_future()
        self._inflight[source.digest] = future
        try:
            result = await self._run(source, timeout, started)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # mark it retrieved when nobody else waits on it
            raise
        else:
            future.set_result(result)
            if not result.error:
                self._cache[source.digest] = result.diagnostics
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return result
        finally:
            del self._inflight[source.digest]

    async def _run(self, source: Source, timeout: float, started: float) -> CheckResult:
        folder = self._folders.take()
        try:
            path = folder / "user.ts"
            path.write_text(source.text)
            output, status = await self._deno_check(path, timeout)
        finally:
            self._folders.give(folder)
        seconds = time.perf_counter() - started
        if output is None:
            return CheckResult((), seconds, error=f"the type check took over {timeout:g} s")
        if status == 0:
            return CheckResult((), seconds)
        text = output.decode("utf-8", errors="replace")
        diagnostics = parse_diagnostics(text, source, path.as_uri())
        if not diagnostics:
            return CheckResult(
                (), seconds, error=f"deno check failed (exit status {status}): {text.strip()}"
            )
        return CheckResult(tuple(diagnostics), seconds)

    async def _deno_check(self, path: Path, timeout: float) -> tuple[bytes | None, int | None]:
        """`deno check` of `path`: its output and exit status (no output: timed out)."""
        process = await asyncio.create_subprocess_exec(
            self._deno,
            "check",
            "--quiet",
            "--no-config",
            "--no-lock",
            "--no-npm",
            "--no-remote",
            "--cached-only",
            "--import-map",
            str(self._import_map),
            str(path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=path.parent,
            env=self._env,
            start_new_session=True,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            return None, None
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await asyncio.shield(process.wait())
        return output, process.returncode


def parse_diagnostics(output: str, source: Source, module_url: str) -> list[str]:
    """`deno check`'s report as one readable entry per diagnostic, located in the code:

    line 3: Argument of type 'string' is not assignable to parameter of type 'number'.
      add({ a: "1" });
              ~~~
    """
    lines = [_ANSI.sub("", line).rstrip() for line in output.splitlines()]
    blocks: list[list[str]] = []
    other: list[str] = []
    for line in lines:
        if _HEADER.match(line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        elif line.strip() and not _SUMMARY.match(line) and not _NOISE.match(line):
            other.append(line)
    entries = [_diagnostic(block, source, module_url) for block in blocks]
    if other:
        text = "\n".join(other).removeprefix("error: ")
        entries.insert(0, _tidy(source.relocate(text, module_url)))
    return entries


def _diagnostic(block: list[str], source: Source, module_url: str) -> str:
    header = _HEADER.match(block[0])
    assert header is not None
    body = [line for line in block[1:] if not _SUMMARY.match(line) and not _NOISE.match(line)]
    # The main part runs up to the first `at <location>` line; what follows
    # (after a blank line, indented) are related places such as "The expected
    # type comes from …" in the stubs.
    at_index = next((i for i, line in enumerate(body) if _AT.match(line)), None)
    main = body if at_index is None else body[:at_index]
    rest = [] if at_index is None else body[at_index + 1 :]
    place = "" if at_index is None else _place(_location_of(body[at_index]), source, module_url)

    message = [header["message"]]
    snippet: list[str] = []
    if len(main) >= 2 and _MARKER.match(main[-1]):
        message.extend(main[:-2])
        snippet = main[-2:]
    else:
        message.extend(main)
    message = [line for line in message if line.strip()]
    text = "\n".join(message)
    if place:
        text = f"{place}: {text}"
    if snippet and place.startswith("line "):
        text += "\n" + "\n".join("  " + line for line in snippet)

    related = _related(rest, source, module_url)
    if related:
        text += "\n" + "\n".join(related)
    return _tidy(source.relocate(text, module_url))


def _location_of(line: str) -> str:
    match = _AT.match(line)
    return match["location"] if match else ""


def _place(location: str, source: Source, module_url: str) -> str:
    match = re.fullmatch(r"(?P<url>.+):(?P<line>\d+):(?P<col>\d+)", location)
    if not match:
        return location
    if match["url"] != module_url:
        return match["url"]
    return source.where(int(match["line"]))


def _related(lines: list[str], source: Source, module_url: str) -> list[str]:
    notes: list[str] = []
    message: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        at = _AT.match(line)
        if at:
            # The message's first line, without the source snippet Deno repeats.
            text = message[0].strip() if message else ""
            if text:
                notes.append(f"  note ({_place(at['location'], source, module_url)}): {text}")
            message = []
        else:
            message.append(line)
    return notes


def _tidy(text: str) -> str:
    text = re.sub(
        r"Cannot find module '" + re.escape(_NO_IMPORTS) + r"[^']*'\.?",
        "Cannot import files here: the sandbox's code imports nothing (tools are functions "
        "already in scope).",
        text,
    )
    return text.replace(_NO_IMPORTS, "")
