"""What a sandboxed run may use (`Limits`) and what it produced (`RunOutcome`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = ["LimitHit", "Limits", "RunOutcome"]

LimitHit = Literal["timeout", "memory", "output"]


class Limits(BaseModel):
    """The limits of one run. Immutable, so a default instance can be shared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float = Field(default=30.0, gt=0)
    """Wall-clock time of the code itself, from the moment it is handed the run
    (process start-up and type checking are not counted). The host kills the
    process group when it is up: Deno has no timeout of its own."""
    heap_mb: int = Field(default=128, ge=16)
    """V8's old-space heap (`--max-old-space-size`): JavaScript objects."""
    memory_mb: int | None = Field(default=512, ge=16)
    """What the process may allocate beyond what Deno needed to start, for
    everything outside the V8 heap too (ArrayBuffers, WebAssembly memories,
    workers' heaps): enforced with RLIMIT_DATA, and by a memory cgroup when
    `cgroup` is on and the machine allows one. None: no such cap."""
    cgroup: bool = False
    """Also put the process in a memory cgroup of its own, capped at `memory_mb`
    (start-up's memory stays charged where it was), where the machine allows
    it; when it does not, the run goes on without one and
    `RunOutcome.memory_cap` says why."""
    max_output_bytes: int = Field(default=64 * 1024, ge=1024)
    """Console output (stdout and stderr together) the run may print; past it
    the process is killed (limit "output")."""
    max_value_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """The size of the return value's JSON."""
    check_timeout_seconds: float = Field(default=60.0, gt=0)
    """The type check (`deno check`)."""
    startup_timeout_seconds: float = Field(default=30.0, gt=0)
    """Starting a Deno process up to the point where it waits for its run."""


class RunOutcome(BaseModel):
    """The result of one run; `error` is set if and only if `ok` is false."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    value: JsonValue = None
    """The code's return value as JSON (`undefined` becomes null)."""
    console: str = ""
    """What the code printed (stdout and stderr, interleaved as they arrived),
    capped at `Limits.max_output_bytes` with a note when it was cut."""
    error: str = ""
    """Why the run failed: an uncaught exception (`Name: message` with a stack
    trimmed to the code, in its own line numbers), a limit, a type check."""
    limit_hit: str | None = Field(default=None, pattern="^(timeout|memory|output)$")
    """None, or the `LimitHit` that ended the run: "timeout", "memory" or "output".
    (Typed `str` so that it fits code-mode's `SandboxOutcome` protocol.)"""
    diagnostics: list[str] = Field(default_factory=list)
    """Type-check errors, one per entry, located in the code's own lines."""
    duration_seconds: float = 0.0
    """Wall-clock time of the whole `run()`, check included."""
    check_seconds: float = 0.0
    """The type check (0 when skipped; near 0 when it came from the cache)."""
    check_cached: bool = False
    startup_seconds: float = 0.0
    """Starting Deno until it waited for the run (0 for a process from the warm
    pool, whose start-up happened earlier)."""
    execute_seconds: float = 0.0
    """From handing the run to the process until its result (or its end)."""
    warm: bool = False
    """Served by a process from the warm pool."""
    memory_cap: str = ""
    """The memory limits that applied, and why a requested cgroup did not."""
    exit_code: int | None = None
    """The Deno process's exit status (negative: killed by that signal)."""
