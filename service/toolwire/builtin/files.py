"""File tools (group "fs"): read, write, edit, search, list and delete files,
confined to a `Workspace`.

Every path goes through the workspace: outside the root (directly, by `..`,
or through a symbolic link) is `denied_by_policy` with "path traversal
denied: …"; a path that does not fit the call (missing, a folder where a file
belongs, a binary file, NUL bytes) is `invalid_arguments` naming the path, so
the model can correct itself.

Choices:
- writes and edits are atomic: the new content goes to a temporary file in
  the same folder that then replaces the target (its permission bits are kept;
  a hard link to the old file keeps the old content);
- `file_delete` removes files, symbolic links (the link, never its target) and
  empty folders; a folder with content only with `recursive=true`; never the
  workspace root;
- `file_search` walks without following symbolic links and passes over
  `.git`, `.hg` and `.svn`; grep skips binary files and files above a size.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from typing import IO, Annotated, Any, Literal, ParamSpec, TypeVar

from pydantic import Field

from toolwire.declare import tool
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.tools import Tool, ToolContext
from toolwire.validation import ArgumentError
from toolwire.workspace import InvalidPathError, PathTraversalError, Workspace
from toolwire.workspace.confinement import kind_of

__all__ = ["file_tools"]

DEFAULT_MAX_READ_BYTES = 16 * 1024
"""What `file_read` returns at most: the registry's default output limit, so
that a whole file is never cut by truncation without the model being told."""
DEFAULT_MAX_EDIT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_SEARCH_RESULTS = 200
DEFAULT_MAX_LIST_ENTRIES = 500
DEFAULT_MAX_GREP_FILE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_FILES_SCANNED = 50_000
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn"})

_SNIFF_BYTES = 8192
_MAX_LINE_CHARS = 2000
_LINE_READ_BYTES = 1024 * 1024
_NOTE_ROOM = 256
_MAX_COUNTED_BYTES = 256 * 1024 * 1024
_MAX_COMPARED_LINES = 20_000
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK  # a FIFO must not block the open

P = ParamSpec("P")
R = TypeVar("R")


def file_tools(
    workspace: Workspace,
    *,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    max_edit_bytes: int = DEFAULT_MAX_EDIT_BYTES,
    max_search_results: int = DEFAULT_MAX_SEARCH_RESULTS,
    max_list_entries: int = DEFAULT_MAX_LIST_ENTRIES,
    max_grep_file_bytes: int = DEFAULT_MAX_GREP_FILE_BYTES,
    max_files_scanned: int = DEFAULT_MAX_FILES_SCANNED,
) -> list[Tool]:
    """The six file tools over `workspace`.

    `max_read_bytes` should not exceed the registry's `max_output_bytes`, so
    that a read is either whole or refused with advice, never silently cut.
    """

    def shown(path: str) -> str:
        return workspace.display(workspace.resolve(path))

    @tool(name="file_read", safety_tier=SafetyTier.READ_ONLY, group="fs")
    @_confined
    def file_read(
        path: str,
        start_line: Annotated[int, Field(ge=1)] | None = None,
        end_line: Annotated[int, Field(ge=1)] | None = None,
    ) -> str:
        """Read a UTF-8 text file from the workspace, whole or a range of lines.

        Without a range the content comes as it is; with start_line and/or
        end_line the lines come numbered (`12│ text`). Large files are refused
        whole: read them in ranges, or find the place with file_search (grep).

        Args:
            path: File path, relative to the workspace root.
            start_line: First line to return (1-based); alone, reads to the end.
            end_line: Last line to return (inclusive); alone, reads from line 1.
        """
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ArgumentError(f"end_line ({end_line}) is before start_line ({start_line})")
        name = shown(path)
        with _TextFile(workspace, path, name) as (f, size):
            if start_line is None and end_line is None:
                return _whole(f, name, size, max_read_bytes)
            return _numbered(f, name, start_line or 1, end_line, max_read_bytes - _NOTE_ROOM)

    @tool(name="file_write", safety_tier=SafetyTier.SIDE_EFFECTING, group="fs")
    @_confined
    def file_write(path: str, content: str) -> ToolResult:
        """Write a text file in the workspace, creating it (and its folders) or
        replacing all of its content.

        To change part of a file, use file_edit instead.

        Args:
            path: File path, relative to the workspace root.
            content: The complete new content (UTF-8).
        """
        data = _encoded(content, "'content'")
        created = _write_atomic(workspace, path, data)
        name = shown(path)
        state = "created" if created else "replaced"
        return ToolResult.ok(
            f"wrote {len(data):,} bytes to {name!r} ({state})",
            {"path": name, "bytes_written": len(data), "created": created},
        )

    @tool(name="file_edit", safety_tier=SafetyTier.SIDE_EFFECTING, group="fs")
    @_confined
    def file_edit(path: str, old: Annotated[str, Field(min_length=1)], new: str) -> ToolResult:
        """Replace one exact snippet of a text file with another.

        `old` must occur exactly once, whitespace and indentation included:
        copy it from file_read's output (without the line numbers) and include
        enough surrounding lines to make it unique.

        Args:
            path: File path, relative to the workspace root.
            old: The exact text to replace; it must occur exactly once.
            new: The text to put in its place (may be empty, to delete `old`).
        """
        if old == new:
            raise ArgumentError("'old' and 'new' are the same; the edit would change nothing")
        name = shown(path)
        text = _read_for_edit(workspace, path, name, max_edit_bytes)
        if old not in text and "\r\n" in text and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        starts = _occurrences(text, old)
        if not starts:
            raise ArgumentError(_absent(text, old, name))
        if len(starts) > 1:
            raise ArgumentError(_ambiguous(text, starts, name))
        at = starts[0]
        updated = text[:at] + new + text[at + len(old) :]
        _write_atomic(workspace, path, _encoded(updated, "'new'"))
        line = text.count("\n", 0, at) + 1
        removed, added = old.count("\n") + 1, new.count("\n") + 1 if new else 0
        return ToolResult.ok(
            f"edited {name!r}: replaced {_lines(removed)} at line {line} with {_lines(added)}",
            {"path": name, "line": line, "removed_lines": removed, "added_lines": added},
        )

    @tool(name="file_search", safety_tier=SafetyTier.READ_ONLY, group="fs")
    @_confined
    def file_search(
        pattern: Annotated[str, Field(min_length=1)],
        context: ToolContext,
        type: Literal["glob", "grep"] = "glob",
        path: str = ".",
    ) -> ToolResult:
        """Find files by name (glob) or lines by content (grep) in the workspace.

        glob: `*` and `?` match within one name, `**` across folders; a pattern
        without `/` matches names anywhere below `path` (`*.py`), one with `/`
        matches paths relative to `path` (`src/**/test_*.py`). grep: a Python
        regular expression searched line by line in text files; answers come as
        `path:line: text`. Symbolic links are not followed; .git is skipped.

        Args:
            pattern: The glob pattern or the regular expression.
            type: glob to match file names, grep to search file contents.
            path: Folder (or, for grep, file) to search, relative to the workspace root.
        """
        searcher = _Search(
            workspace,
            context,
            max_results=max_search_results,
            max_grep_file_bytes=max_grep_file_bytes,
            max_files_scanned=max_files_scanned,
        )
        if type == "grep":
            return searcher.grep(pattern, path)
        return searcher.glob(pattern, path)

    @tool(name="file_list", safety_tier=SafetyTier.READ_ONLY, group="fs")
    @_confined
    def file_list(path: str = ".") -> ToolResult:
        """List a folder of the workspace: folders first (marked with `/`),
        then files with their sizes, each group sorted by name.

        Args:
            path: Folder path, relative to the workspace root.
        """
        real = workspace.resolve(path)
        name = workspace.display(real)
        if real.is_file():
            raise ArgumentError(f"{name!r} is a file, not a folder; read it with file_read")
        return _listing(workspace, path, name, max_list_entries)

    @tool(name="file_delete", safety_tier=SafetyTier.SIDE_EFFECTING, group="fs")
    @_confined
    def file_delete(path: str, recursive: bool = False) -> ToolResult:
        """Delete a file, a symbolic link (not its target) or an empty folder
        from the workspace; a folder with content only with recursive=true.

        Args:
            path: Path to delete, relative to the workspace root.
            recursive: Delete a folder together with everything in it.
        """
        target = workspace.resolve_entry(path)
        if target == workspace.root:
            return ToolResult.fail(
                ErrorCode.DENIED_BY_POLICY,
                f"refusing to delete the workspace root ({path!r}); delete what it holds instead",
            )
        return _delete(workspace, path, workspace.display(target), recursive=recursive)

    return [t.tool for t in (file_read, file_write, file_edit, file_search, file_list, file_delete)]


# --- errors --------------------------------------------------------------------


def _confined(func: Callable[P, R]) -> Callable[P, R | ToolResult]:
    """Workspace refusals and filesystem errors as results a model can act on."""

    @functools.wraps(func)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R | ToolResult:
        try:
            return func(*args, **kwargs)
        except PathTraversalError as e:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, str(e))
        except InvalidPathError as e:
            raise ArgumentError(str(e)) from e
        except OSError as e:
            path = kwargs.get("path") or "."
            problem = _argument_problem(e, str(path))
            if problem is not None:
                raise ArgumentError(problem) from e
            return ToolResult.fail(
                ErrorCode.HANDLER_ERROR, f"{path!r}: {e.strerror or e.__class__.__name__}"
            )

    return guarded


def _argument_problem(error: OSError, path: str) -> str | None:
    """The message for an error the model can fix by changing its call."""
    if isinstance(error, FileNotFoundError):
        return f"no such file or folder: {path!r}"
    if isinstance(error, NotADirectoryError):
        return f"{path!r}: a part of the path is a file, not a folder"
    if isinstance(error, IsADirectoryError):
        return f"{path!r} is a folder, not a file"
    if isinstance(error, FileExistsError):
        return f"{path!r} already exists"
    if error.errno == errno.ENAMETOOLONG:
        return f"{path!r}: a name in the path is too long"
    return None


# --- reading -----------------------------------------------------------------


class _TextFile:
    """A regular, non-binary file opened through the workspace, with its size."""

    def __init__(self, workspace: Workspace, path: str, name: str) -> None:
        self._file = os.fdopen(workspace.open(path, _READ_FLAGS), "rb")
        try:
            st = os.fstat(self._file.fileno())
            _require_regular(st.st_mode, name)
            if b"\x00" in self._file.read(_SNIFF_BYTES):
                raise ArgumentError(f"{name!r} is a binary file; file_read reads text files only")
            self._file.seek(0)
        except BaseException:
            self._file.close()
            raise
        self._size = st.st_size

    def __enter__(self) -> tuple[IO[bytes], int]:
        return self._file, self._size

    def __exit__(self, *_: object) -> None:
        self._file.close()


def _require_regular(mode: int, name: str) -> None:
    if stat.S_ISDIR(mode):
        raise ArgumentError(f"{name!r} is a folder, not a file; list it with file_list")
    if not stat.S_ISREG(mode):
        raise ArgumentError(f"{name!r} is not a regular file (a device, socket or pipe)")


def _whole(f: IO[bytes], name: str, size: int, limit: int) -> str:
    if size > limit:
        lines = _count_lines(f, size)
        counted = f" ({lines:,} lines)" if lines is not None else ""
        raise ArgumentError(
            f"{name!r} is {size:,} bytes{counted}, more than file_read returns at once "
            f"({limit:,} bytes); read it in ranges with start_line and end_line "
            "(e.g. start_line=1, end_line=200), or find the place with file_search type=grep"
        )
    data = f.read(limit + 1)
    if len(data) > limit:  # it grew since fstat
        raise ArgumentError(f"{name!r} is growing; read it in ranges with start_line and end_line")
    if not data:
        return f"[{name!r} is empty]"
    try:
        return data.decode()
    except UnicodeDecodeError:
        return (
            data.decode(errors="replace")
            + f"\n[note: {name!r} is not valid UTF-8; undecodable bytes are shown as �]"
        )


def _count_lines(f: IO[bytes], size: int) -> int | None:
    if size > _MAX_COUNTED_BYTES:
        return None
    count = 0
    last = b""
    while chunk := f.read(1024 * 1024):
        count += chunk.count(b"\n")
        last = chunk
    return count + (1 if last and not last.endswith(b"\n") else 0)


def _read_lines(f: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """Each line (without its newline) cut to a sane length, with its full
    length: a file with one endless line must not fill the memory."""
    while True:
        line = f.readline(_LINE_READ_BYTES)
        if not line:
            return
        length = len(line)
        if not line.endswith(b"\n"):
            while more := f.readline(_LINE_READ_BYTES):
                length += len(more)
                if more.endswith(b"\n"):
                    break
        yield line.rstrip(b"\n").removesuffix(b"\r"), length


def _numbered(f: IO[bytes], name: str, start: int, end: int | None, budget: int) -> str:
    rows: list[tuple[int, str]] = []
    used = 0
    stopped_at: int | None = None
    last = 0
    for number, (raw, length) in enumerate(_read_lines(f), 1):
        last = number
        if number < start:
            continue
        if end is not None and number > end:
            break
        text = raw.decode(errors="replace")
        if len(text) > _MAX_LINE_CHARS or length > len(raw) + 2:
            text = text[:_MAX_LINE_CHARS] + f" … [line cut: {length:,} bytes in all]"
        cost = len(text.encode()) + 12
        if rows and used + cost > budget:
            stopped_at = number
            break
        rows.append((number, text))
        used += cost
    if not rows:
        raise ArgumentError(
            f"start_line {start} is past the end of {name!r}, which has {_lines(last)}"
        )
    width = max(4, len(str(rows[-1][0])))
    out = "\n".join(f"{n:>{width}}│ {text}" for n, text in rows)
    if stopped_at is not None:
        out += (
            f"\n[stopped before line {stopped_at} to stay within {budget:,} bytes; "
            f"continue with start_line={stopped_at}]"
        )
    elif end is not None and end > last:
        out += f"\n[end of file: {name!r} has {_lines(last)}]"
    return out


def _lines(n: int) -> str:
    return _count(n, "line")


def _count(n: int, noun: str) -> str:
    return f"1 {noun}" if n == 1 else f"{n:,} {noun}s"


def _entries(n: int) -> str:
    return "1 entry" if n == 1 else f"{n:,} entries"


# --- writing and editing -------------------------------------------------------


def _write_atomic(workspace: Workspace, path: str, data: bytes) -> bool:
    """Write `data` to `path` through a temporary file in the same folder;
    True when the file is new."""
    with workspace.entry(path, follow=True, create_parents=True) as (dir_fd, name):
        try:
            old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None:
            if stat.S_ISLNK(old.st_mode):
                raise PathTraversalError(
                    f"path traversal denied: {path!r} became a symbolic link while it was written"
                )
            _require_regular(old.st_mode, workspace.display(workspace.resolve(path)))
        temp = f".{name[:180]}.{secrets.token_hex(4)}.toolwire-tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o666 if old is None else 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                if old is not None:
                    os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                f.write(data)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
    return old is None


def _read_for_edit(workspace: Workspace, path: str, name: str, limit: int) -> str:
    with _TextFile(workspace, path, name) as (f, size):
        if size > limit:
            raise ArgumentError(
                f"{name!r} is {size:,} bytes; file_edit edits files up to {limit:,} bytes"
            )
        data = f.read(limit + 1)
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise ArgumentError(
            f"{name!r} is not valid UTF-8 text (at byte {e.start:,}); file_edit edits UTF-8 "
            "text files only"
        ) from e


def _encoded(text: str, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise ArgumentError(
            f"{what} is not valid Unicode text (a lone surrogate at character {e.start})"
        ) from e


def _occurrences(text: str, snippet: str) -> list[int]:
    """Where `snippet` starts in `text`, overlapping occurrences included."""
    found = []
    at = text.find(snippet)
    while at != -1:
        found.append(at)
        at = text.find(snippet, at + 1)
    return found


def _absent(text: str, old: str, name: str) -> str:
    message = f"'old' was not found in {name!r}."
    if " ".join(old.split()) in " ".join(text.split()):
        message += " It does occur with different whitespace or indentation."
    lines = text.splitlines()
    first = next((s.strip() for s in old.splitlines() if s.strip()), "")
    stripped = [s.strip() for s in lines]
    close = (
        difflib.get_close_matches(first, stripped, n=3, cutoff=0.6)
        if first and len(lines) <= _MAX_COMPARED_LINES
        else []
    )
    numbers = sorted({stripped.index(c) for c in close})
    if numbers:
        span = max(1, len(old.splitlines()))
        shown = []
        for i in numbers:
            for n in range(i, min(i + span, len(lines))):
                shown.append(f"{n + 1:>5}│ {lines[n][:200]}")
            shown.append("")
        message += " The closest lines:\n" + "\n".join(shown).rstrip()
    return (
        message + "\nCopy the exact text (whitespace included) from file_read's output and "
        "try again."
    )


def _ambiguous(text: str, starts: list[int], name: str) -> str:
    numbers = [text.count("\n", 0, at) + 1 for at in starts]
    listed = ", ".join(str(n) for n in numbers[:10]) + (", …" if len(numbers) > 10 else "")
    return (
        f"'old' occurs {len(starts)} times in {name!r} (at lines {listed}); include more "
        "of the surrounding text so that it matches exactly once"
    )


# --- listing and deleting ----------------------------------------------------


def _listing(workspace: Workspace, path: str, name: str, limit: int) -> ToolResult:
    fd = workspace.open_dir(path)
    try:
        rows: list[dict[str, Any]] = []
        with os.scandir(fd) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = kind_of(st.st_mode)
                row: dict[str, Any] = {
                    "name": e.name,
                    "type": kind,
                    "size": st.st_size if kind == "file" else None,
                }
                if kind == "symlink":
                    try:
                        row["target"] = os.readlink(e.name, dir_fd=fd)
                    except OSError:
                        row["target"] = "?"
                rows.append(row)
    finally:
        os.close(fd)
    rows.sort(key=lambda r: (r["type"] != "dir", r["name"]))
    if not rows:
        return ToolResult.ok(f"{name!r} is empty", {"path": name, "entries": [], "total": 0})
    folders = sum(1 for r in rows if r["type"] == "dir")
    shown = rows[:limit]
    kinds = f"{_count(folders, 'folder')}, {_count(len(rows) - folders, 'file')}"
    lines = [f"{name!r}: {_entries(len(rows))} ({kinds})"]
    for r in shown:
        if r["type"] == "dir":
            lines.append(f"{r['name']}/")
        elif r["type"] == "file":
            lines.append(f"{r['name']}  {r['size']:,} bytes")
        elif r["type"] == "symlink":
            lines.append(f"{r['name']} -> {r['target']}  (symbolic link)")
        else:
            lines.append(f"{r['name']}  (not a regular file)")
    if len(rows) > limit:
        lines.append(f"[{len(rows) - limit:,} more entries not shown]")
    return ToolResult.ok("\n".join(lines), {"path": name, "entries": shown, "total": len(rows)})


def _delete(workspace: Workspace, path: str, name: str, *, recursive: bool) -> ToolResult:
    with workspace.entry(path, follow=False) as (dir_fd, entry):
        kind = kind_of(os.stat(entry, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        if kind != "dir":
            os.unlink(entry, dir_fd=dir_fd)
            what = {"file": "file", "symlink": "symbolic link"}.get(kind, "entry")
            return ToolResult.ok(f"deleted the {what} {name!r}", {"path": name, "type": kind})
        held = _held(dir_fd, entry)
        if held and not recursive:
            raise ArgumentError(
                f"folder {name!r} is not empty ({_entries(held)}); pass recursive=true to delete "
                "it with everything in it"
            )
        removed = sum(1 for _ in workspace.walk(path)) if held else 0
        shutil.rmtree(entry, dir_fd=dir_fd)
    detail = f" and the {_entries(removed)} it held" if removed else " (it was empty)"
    return ToolResult.ok(
        f"deleted the folder {name!r}{detail}", {"path": name, "type": "dir", "removed": removed}
    )


def _held(dir_fd: int, name: str) -> int:
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return len(os.listdir(fd))
    finally:
        os.close(fd)


# --- searching ---------------------------------------------------------------


class _Search:
    def __init__(
        self,
        workspace: Workspace,
        context: ToolContext,
        *,
        max_results: int,
        max_grep_file_bytes: int,
        max_files_scanned: int,
    ) -> None:
        self.workspace = workspace
        self.context = context
        self.max_results = max_results
        self.max_grep_file_bytes = max_grep_file_bytes
        self.max_files_scanned = max_files_scanned

    def glob(self, pattern: str, path: str) -> ToolResult:
        real = self.workspace.resolve(path)
        base = self.workspace.display(real)
        if not real.exists():
            raise ArgumentError(f"no such folder: {path!r}")
        if not real.is_dir():
            raise ArgumentError(f"{base!r} is not a folder; glob searches a folder")
        pattern = pattern.strip("/") or "*"
        try:
            matcher = glob_matcher(pattern)
        except re.error as e:
            raise ArgumentError(f"'pattern' is not a valid glob pattern: {e}") from e
        by_name = "/" not in pattern.strip("/")
        prefix = "" if base == "." else base + "/"
        found: list[str] = []
        more = False
        scanned = 0
        for entry in self.workspace.walk(path, skip=SKIPPED_FOLDERS):
            scanned += 1
            if scanned > self.max_files_scanned or self.context.cancelled.is_set():
                more = True
                break
            subject = entry.name if by_name else entry.path[len(prefix) :]
            if not matcher(subject):
                continue
            if len(found) == self.max_results:
                more = True
                break
            suffix = {"dir": "/", "symlink": " (symbolic link)"}.get(entry.kind, "")
            found.append(entry.path + suffix)
        structured = {"type": "glob", "paths": found, "more": more}
        if not found:
            return ToolResult.ok(f"no paths match {pattern!r} under {base!r}", structured)
        many = "+" if more else ""
        head = f"{_count(len(found), 'path')}{many} matching {pattern!r} under {base!r}:"
        lines = [head, *found]
        if more:
            lines.append(
                f"[stopped after {len(found)} results or {self.max_files_scanned:,} entries; "
                "narrow the pattern or the path]"
            )
        return ToolResult.ok("\n".join(lines), structured)

    def grep(self, pattern: str, path: str) -> ToolResult:
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise ArgumentError(f"'pattern' is not a valid regular expression: {e}") from e
        real = self.workspace.resolve(path)
        base = self.workspace.display(real)
        matches: list[dict[str, Any]] = []
        more = False
        skipped_binary = skipped_large = scanned = 0
        for entry_path, size, opener in self._files(path, real.is_dir()):
            scanned += 1
            if scanned > self.max_files_scanned or self.context.cancelled.is_set():
                more = True
                break
            if size > self.max_grep_file_bytes:
                skipped_large += 1
                continue
            try:
                with os.fdopen(opener(), "rb") as f:
                    data = f.read(self.max_grep_file_bytes + 1)
            except OSError:
                continue
            if b"\x00" in data[:_SNIFF_BYTES]:
                skipped_binary += 1
                continue
            lines = data.decode(errors="replace").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for number, line in enumerate(lines, 1):
                line = line.removesuffix("\r")
                if regex.search(line):
                    if len(matches) == self.max_results:
                        more = True
                        break
                    matches.append({"path": entry_path, "line": number, "text": line[:300]})
            if more:
                break
        files = len({m["path"] for m in matches})
        structured = {
            "type": "grep",
            "matches": matches,
            "more": more,
            "skipped_binary": skipped_binary,
            "skipped_large": skipped_large,
        }
        notes = []
        if skipped_binary:
            notes.append(f"{_count(skipped_binary, 'binary file')} skipped")
        if skipped_large:
            notes.append(
                f"{_count(skipped_large, 'file')} above {self.max_grep_file_bytes:,} bytes skipped"
            )
        note = f" ({'; '.join(notes)})" if notes else ""
        if not matches:
            return ToolResult.ok(f"no lines match {pattern!r} under {base!r}{note}", structured)
        many = "+" if more else ""
        lines_out = [
            f"{_count(len(matches), 'matching line')}{many} in {_count(files, 'file')} "
            f"under {base!r}{note}:"
        ]
        lines_out += [f"{m['path']}:{m['line']}: {m['text']}" for m in matches]
        if more:
            lines_out.append(
                f"[stopped after {len(matches)} matches or {self.max_files_scanned:,} entries; "
                "narrow the pattern or the path]"
            )
        return ToolResult.ok("\n".join(lines_out), structured)

    def _files(self, path: str, is_dir: bool) -> Iterator[tuple[str, int, Callable[[], int]]]:
        """(path, size, open) of each regular file to grep, never through a link."""
        flags = _READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC
        if not is_dir:
            fd = self.workspace.open(path, _READ_FLAGS)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            name = self.workspace.display(self.workspace.resolve(path))
            _require_regular(st.st_mode, name)
            yield name, st.st_size, lambda: self.workspace.open(path, _READ_FLAGS)
            return
        for entry in self.workspace.walk(path, skip=SKIPPED_FOLDERS):
            if entry.kind == "file":
                yield (
                    entry.path,
                    entry.size,
                    functools.partial(os.open, entry.name, flags, dir_fd=entry.dir_fd),
                )


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A matcher for a glob: `*` and `?` stay within one name, `**` spans
    folders (`**/` also matches no folder at all), `[abc]`/`[!abc]` classes."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if i < n and pattern[i] == "/":
                out.append("(?:.*/)?")
                i += 1
            else:
                out.append(".*")
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            j = pattern.find("]", j)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    regex = re.compile("".join(out).rstrip("/"), re.DOTALL)
    return lambda subject: regex.fullmatch(subject) is not None
