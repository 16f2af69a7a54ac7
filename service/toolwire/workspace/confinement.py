"""The workspace: the one folder that the file tools and `exec` work in.

Every path a model sends goes through `Workspace.resolve` (or
`resolve_entry`): relative paths are taken from the root, absolute ones are
accepted only when they land inside it, and symbolic links are followed
(canonicalised) before the check, so `link/../..`, `../etc/passwd` and a link
inside the root that points out are all refused with `PathTraversalError`.

Checking a path and then using it leaves a window (TOCTOU) in which a folder
on the way could be swapped for a symbolic link. The opening helpers close it
as far as POSIX allows: they walk the canonical path from an open descriptor of
the root, one component at a time, with `O_NOFOLLOW` (and `O_DIRECTORY` for
folders), so a component that is — or has just become — a symbolic link is
refused instead of followed. `walk` lists folders through descriptors in the
same way and never descends into a symbolic link.

What remains, documented rather than hidden:
- hard links: a hard link inside the root to a file elsewhere (on the same
  filesystem) is indistinguishable from an ordinary file;
- a folder moved out of the root while a call holds a descriptor to it;
- mount points (bind mounts) inside the root;
- `exec` is not confined by any of this: its working folder is checked, but
  the command can reach whatever the server's user can.

POSIX only: the helpers rely on `dir_fd`, `O_NOFOLLOW` and `O_DIRECTORY`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "InvalidPathError",
    "PathTraversalError",
    "WalkEntry",
    "Workspace",
    "WorkspaceError",
]

NAME_MAX = 255
"""Bytes in one file name (Linux, macOS)."""
PATH_MAX = 4096
"""Bytes in a whole path (Linux)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

EntryKind = Literal["file", "dir", "symlink", "other"]


class WorkspaceError(Exception):
    """A path the workspace will not use; the message is written for the model."""


class PathTraversalError(WorkspaceError):
    """The path leads outside the workspace root (directly or through a link).
    The message starts with "path traversal denied:"."""


class InvalidPathError(WorkspaceError):
    """The path cannot name a file: empty, NUL bytes, control characters,
    names too long, a symbolic link loop."""


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One entry met by `Workspace.walk`."""

    path: str
    """Relative to the workspace root, with `/` separators."""
    name: str
    kind: EntryKind
    size: int
    """In bytes, for files; 0 otherwise."""
    dir_fd: int
    """An open descriptor of the folder that holds the entry; valid only until
    the walk moves on. Open the entry with `dir_fd=` and `O_NOFOLLOW`."""


def kind_of(mode: int) -> EntryKind:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


class Workspace:
    """A root folder and the rules that keep paths inside it.

    The root is created if missing and canonicalised once, here.
    """

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.realpath(path))
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace root {str(self.root)!r} is not a directory")

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # --- resolving -------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The canonical path (every symbolic link followed) that `path` names
        inside the root. Raises PathTraversalError or InvalidPathError."""
        candidate = self._candidate(path)
        real = Path(os.path.realpath(candidate))
        self._confine(path, candidate, real)
        if real != self.root and real.is_symlink():
            # realpath leaves a link unresolved only when it loops
            raise InvalidPathError(f"{path!r} is a symbolic link loop")
        return real

    def resolve_entry(self, path: str) -> Path:
        """Like `resolve`, but the last component is not followed: for a
        symbolic link, the link itself (to delete or describe it)."""
        candidate = self._candidate(path)
        if candidate.name in ("", ".", "..") or Path(os.path.normpath(candidate)) == self.root:
            return self.resolve(path)
        parent = Path(os.path.realpath(candidate.parent))
        self._confine(path, candidate, parent)
        return parent / candidate.name

    def display(self, path: Path) -> str:
        """A canonical path inside the root as the model sees it: relative,
        with `/` separators, `.` for the root itself."""
        return "." if path == self.root else path.relative_to(self.root).as_posix()

    def _candidate(self, path: str) -> Path:
        problem = name_problem(path)
        if problem:
            raise InvalidPathError(problem)
        given = Path(path)
        return given if given.is_absolute() else self.root / given

    def _confine(self, path: str, candidate: Path, real: Path) -> None:
        if real == self.root or real.is_relative_to(self.root):
            return
        lexical = Path(os.path.normpath(candidate))
        inside = lexical == self.root or lexical.is_relative_to(self.root)
        how = " through a symbolic link" if inside else ""
        raise PathTraversalError(
            f"path traversal denied: {path!r} resolves outside the workspace ({self.root}){how}"
        )

    # --- opening ---------------------------------------------------------------

    def open(
        self,
        path: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o666,
        *,
        create_parents: bool = False,
    ) -> int:
        """A file descriptor for `path` (resolved and confined), opened without
        following any symbolic link on the way; the caller closes it.
        `create_parents` creates missing folders first."""
        real = self.resolve(path)
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        if real == self.root:
            return os.open(self.root, flags)
        parts = real.relative_to(self.root).parts
        dir_fd = self._walk_to(parts[:-1], path, create=create_parents)
        try:
            return self._open_at(dir_fd, parts[-1], path, flags, mode)
        finally:
            os.close(dir_fd)

    def open_dir(self, path: str, *, create: bool = False) -> int:
        """A descriptor of the folder `path`; the caller closes it."""
        real = self.resolve(path)
        return self._walk_to(real.relative_to(self.root).parts, path, create=create)

    @contextmanager
    def entry(
        self, path: str, *, follow: bool = True, create_parents: bool = False
    ) -> Iterator[tuple[int, str]]:
        """The folder holding `path` (an open descriptor) and the entry's name
        in it, for operations that take `dir_fd` (rename, unlink, stat, …).

        With `follow`, a symbolic link in the last place is followed (to its
        confined target); without, the entry is the link itself.
        """
        target = self.resolve(path) if follow else self.resolve_entry(path)
        if target == self.root:
            raise InvalidPathError(f"{path!r} is the workspace root itself")
        parts = target.relative_to(self.root).parts
        dir_fd = self._walk_to(parts[:-1], path, create=create_parents)
        try:
            yield dir_fd, parts[-1]
        finally:
            os.close(dir_fd)

    def _walk_to(self, parts: Collection[str], shown: str, *, create: bool) -> int:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                next_fd = self._open_dir_at(fd, part, shown, create=create)
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_dir_at(self, dir_fd: int, name: str, shown: str, *, create: bool) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
        except OSError as e:
            if e.errno in (errno.ENOTDIR, errno.ELOOP):
                self._refuse_if_link(dir_fd, name, shown)
            raise
        # made by someone else meanwhile: the open below checks what it is
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        return self._open_dir_at(dir_fd, name, shown, create=False)

    def _open_at(self, dir_fd: int, name: str, shown: str, flags: int, mode: int) -> int:
        try:
            return os.open(name, flags, mode, dir_fd=dir_fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                self._refuse_if_link(dir_fd, name, shown)
            raise

    def _refuse_if_link(self, dir_fd: int, name: str, shown: str) -> None:
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            return
        if stat.S_ISLNK(mode):
            raise PathTraversalError(
                f"path traversal denied: {shown!r} passes through a symbolic link "
                f"({name!r}) that appeared while it was being opened"
            )

    # --- walking ---------------------------------------------------------------

    def walk(
        self, path: str = ".", *, skip: Collection[str] = (), max_depth: int = 64
    ) -> Iterator[WalkEntry]:
        """Every entry under the folder `path`, depth first, sorted by name.
        Symbolic links are reported, never followed; folders named in `skip`
        are reported but not entered. Unreadable folders are passed over."""
        real = self.resolve(path)
        base = self.display(real)
        fd = self.open_dir(path)
        try:
            yield from self._walk(fd, "" if base == "." else base + "/", 1, skip, max_depth)
        finally:
            os.close(fd)

    def _walk(
        self, dir_fd: int, prefix: str, depth: int, skip: Collection[str], max_depth: int
    ) -> Iterator[WalkEntry]:
        try:
            with os.scandir(dir_fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            kind = kind_of(st.st_mode)
            size = st.st_size if kind == "file" else 0
            yield WalkEntry(prefix + e.name, e.name, kind, size, dir_fd)
            if kind != "dir" or e.name in skip or depth >= max_depth:
                continue
            try:
                sub = os.open(e.name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # gone, unreadable, or swapped for a link: not followed
            try:
                yield from self._walk(sub, prefix + e.name + "/", depth + 1, skip, max_depth)
            finally:
                os.close(sub)


def name_problem(path: str) -> str | None:
    """Why `path` cannot name a file, or None."""
    if not path:
        return "the path is empty; use '.' for the workspace root"
    if "\x00" in path:
        return f"{path!r} contains a NUL byte, which no file name can hold"
    if _CONTROL.search(path):
        return f"{path!r} contains control characters (such as a newline or a tab)"
    try:
        data = os.fsencode(path)
    except UnicodeError:
        return f"{path!r} cannot be encoded as a file name"
    if len(data) > PATH_MAX:
        return f"the path is {len(data):,} bytes long; the limit is {PATH_MAX:,}"
    for part in data.split(b"/"):
        if len(part) > NAME_MAX:
            shown = os.fsdecode(part)[:40]
            return f"the name {shown!r}… is {len(part)} bytes long; the limit is {NAME_MAX}"
    return None
