"""Caps on a sandboxed process's memory beyond V8's heap flag.

`--max-old-space-size` bounds JavaScript objects only: ArrayBuffers, WebAssembly
memories and workers' heaps live outside it (a run can fill gigabytes of
Uint8Arrays under a 64 MiB heap). Two caps cover the rest, both applied to a
process that has finished starting and waits for its run (so Deno's own
start-up, which reserves some 550 MiB of address space, is not counted):

- RLIMIT_DATA, set with prlimit(2) to what the process has mapped so far plus
  the allowance. Linux counts private writable mappings, so V8 heap growth and
  ArrayBuffer backing stores both count, while V8's PROT_NONE reservations do
  not. An ArrayBuffer that does not fit fails with
  `RangeError: Array buffer allocation failed`; a heap that cannot grow ends
  the process with V8's "Fatal … out of memory". (`ulimit -v`, RLIMIT_AS, is no
  use: Deno reserves far more address space than it uses, and dies at start.)
- a memory cgroup of its own where the machine allows one (cgroup v2 with the
  memory controller delegated to our cgroup, or a writable cgroup v1 memory
  hierarchy), created as a child of the cgroup this process runs in, and
  removed after the run. It counts resident memory (what the kernel charges),
  and the kernel's OOM killer enforces it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MemoryCgroup", "cgroup_support", "data_limit", "vm_data_bytes"]

MIB = 1024 * 1024
_PREFIX = "toolwire-sandbox-"


def vm_data_bytes(pid: int) -> int | None:
    """The process's data segment size (VmData), or None if unknown."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def data_limit(pid: int, allowance_mb: int) -> str:
    """Cap the process's data segment at its current size plus `allowance_mb`;
    say what was done (or why not)."""
    current = vm_data_bytes(pid)
    if current is None:
        return "no RLIMIT_DATA cap (the process's memory map is unreadable)"
    limit = current + allowance_mb * MIB
    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (limit, limit))
    except (OSError, ValueError) as error:
        return f"no RLIMIT_DATA cap ({error})"
    return f"RLIMIT_DATA: {allowance_mb} MiB above start-up"


@dataclass(frozen=True)
class _Support:
    version: int  # 1 or 2; 0 when unavailable
    parent: Path | None
    reason: str


_support: _Support | None = None


def cgroup_support() -> _Support:
    """Where memory cgroups can be created for sandboxed processes (cached)."""
    global _support
    if _support is None:
        _support = _detect()
        if _support.parent is not None:
            _remove_stale(_support.parent)
    return _support


def _detect() -> _Support:
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as error:
        return _Support(0, None, f"cgroups are not readable here ({error})")
    v1_path = v2_path = None
    for line in membership:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2_path = path
        elif "memory" in controllers.split(","):
            v1_path = path
    reasons = []
    if v1_path is not None:
        mount = _mount_point(mounts, "cgroup", "memory", v1_path)
        if mount is None:
            reasons.append("the cgroup v1 memory hierarchy is not mounted here")
        elif not os.access(mount, os.W_OK):
            reasons.append(f"{mount} is not writable")
        else:
            return _Support(1, mount, "")
    if v2_path is not None:
        mount = _mount_point(mounts, "cgroup2", None, v2_path)
        if mount is None:
            reasons.append("the cgroup v2 hierarchy is not mounted here")
        else:
            try:
                available = (mount / "cgroup.controllers").read_text().split()
                delegated = (mount / "cgroup.subtree_control").read_text().split()
            except OSError as error:
                available, delegated = [], []
                reasons.append(f"cgroup v2 at {mount} is unreadable ({error})")
            if "memory" not in available:
                reasons.append("cgroup v2 has no memory controller here")
            elif "memory" not in delegated:
                reasons.append(f"the memory controller is not delegated below {mount}")
            elif not os.access(mount, os.W_OK):
                reasons.append(f"{mount} is not writable")
            else:
                return _Support(2, mount, "")
    return _Support(0, None, "; ".join(reasons) or "no memory cgroup found")


def _mount_point(mounts: list[str], fstype: str, option: str | None, path: str) -> Path | None:
    """The folder of cgroup `path` on the mount of `fstype` (with `option`)."""
    for line in mounts:
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 4 or fields[dash + 1] != fstype:
            continue
        if option is not None and option not in fields[dash + 3].split(","):
            continue
        root, mount_point = fields[3], fields[4]
        if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
            continue
        relative = path[len(root) :] if root != "/" else path
        return Path(mount_point) / relative.lstrip("/")
    return None


def _remove_stale(parent: Path) -> None:
    """Remove cgroups left behind by sandbox hosts that died mid-run."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if not child.name.startswith(_PREFIX):
                continue
            pid = child.name[len(_PREFIX) :].split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    child.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class MemoryCgroup:
    """A memory cgroup for one process; `create` returns it, or why it could not."""

    def __init__(self, path: Path, version: int, limit_mb: int) -> None:
        self.path = path
        self.version = version
        self.limit_mb = limit_mb

    @classmethod
    def create(cls, limit_mb: int) -> MemoryCgroup | str:
        support = cgroup_support()
        if support.parent is None:
            return support.reason
        path = support.parent / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError as error:
            return f"cannot create a cgroup under {support.parent} ({error})"
        group = cls(path, support.version, limit_mb)
        limit = str(limit_mb * MIB)
        try:
            if support.version == 1:
                (path / "memory.limit_in_bytes").write_text(limit)
                swap = path / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(limit)
            else:
                (path / "memory.max").write_text(limit)
                swap = path / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
        except OSError as error:
            group.remove()
            return f"cannot set a limit on {path} ({error})"
        return group

    def add(self, pid: int) -> str:
        """Move the process in; say what applies (or why nothing does)."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except OSError as error:
            return f"no cgroup cap (cannot move the process into {self.path}: {error})"
        return f"cgroup v{self.version}: {self.limit_mb} MiB"

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process for this group's limit."""
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        return _counter(self._read(events), "oom_kill") > 0

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.rmdir()

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0
