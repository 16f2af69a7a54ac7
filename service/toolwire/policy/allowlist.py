"""The exec allowlist store: patterns an operator (or an approval with
"remember") has allowed, in one SQLite file in the server's data folder.

The server checks it on the event loop for each exec call, so `check` is one
read of a small table and, on a match, one indexed UPDATE recording when each
allowing pattern was last used. Patterns are read from the file on every
check: `toolwire exec-allowlist add` in another process takes effect on the
next call, without a restart. The file is in WAL mode (readers never wait for
a writer) and one connection is shared by all threads under a lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType

from toolwire.errors import ToolwireError

from .commands import CommandMatch, match_command, simple_commands, validate_pattern

__all__ = [
    "DEFAULT_FILENAME",
    "AddedBy",
    "AllowlistEntry",
    "AllowlistError",
    "ExecAllowlist",
    "exact_pattern",
    "exact_patterns",
]

logger = logging.getLogger(__name__)

DEFAULT_FILENAME = "exec_allowlist.sqlite"
BUSY_TIMEOUT_SECONDS = 2.0
"""Short: `check` runs on the event loop, and other writers (the CLI) hold the
file for milliseconds."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS exec_allowlist (
    pattern TEXT PRIMARY KEY,
    added_by TEXT NOT NULL CHECK (added_by IN ('user', 'auto')),
    added_at REAL NOT NULL,
    last_used_at REAL
)
"""
_COLUMNS = "pattern, added_by, added_at, last_used_at"


class AllowlistError(ToolwireError):
    """A pattern that cannot be stored, or a store that cannot be used."""


class AddedBy(StrEnum):
    USER = "user"
    AUTO = "auto"
    """By an approval that asked to remember the command."""


@dataclass(frozen=True, slots=True)
class AllowlistEntry:
    """One pattern; times are unix seconds."""

    pattern: str
    added_by: AddedBy
    added_at: float
    last_used_at: float | None


def exact_pattern(command: str) -> str:
    """A pattern matching exactly this simple command (stripped, as commands
    are matched). A newline, which patterns cannot hold, becomes `?`."""
    text = command.strip(" \t\n")
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in text)
    return escaped.replace("\n", "?")


def exact_patterns(command: str) -> tuple[str, ...]:
    """Exact patterns for each simple command of a line (none when it cannot
    be split): what remembering an approved compound line needs, since each
    simple command is matched on its own."""
    parts = simple_commands(command)
    return tuple(exact_pattern(p) for p in parts) if isinstance(parts, list) else ()


class ExecAllowlist:
    """The allowlist file of one data folder."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as e:
            raise AllowlistError(f"cannot open the exec allowlist at {path}: {e}") from e

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ExecAllowlist:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def add(self, pattern: str, added_by: AddedBy = AddedBy.USER) -> AllowlistEntry:
        """Store a pattern; one already stored is kept as it is (who added it,
        and when) and returned."""
        problem = validate_pattern(pattern)
        if problem is not None:
            raise AllowlistError(problem)
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO exec_allowlist (pattern, added_by, added_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (pattern) DO NOTHING",
                    (pattern, added_by.value, self._clock()),
                )
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM exec_allowlist WHERE pattern = ?", (pattern,)
                ).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return _entry(row)

    def remove(self, pattern: str) -> bool:
        """Whether the pattern was there."""
        with self._lock:
            cursor = self._connection().execute(
                "DELETE FROM exec_allowlist WHERE pattern = ?", (pattern,)
            )
        return cursor.rowcount > 0

    def entries(self) -> list[AllowlistEntry]:
        with self._lock:
            rows = self._connection().execute(
                f"SELECT {_COLUMNS} FROM exec_allowlist ORDER BY pattern"
            )
            return [_entry(row) for row in rows]

    def patterns(self) -> tuple[str, ...]:
        with self._lock:
            return self._patterns()

    def check(self, command: str, also: Sequence[str] = ()) -> CommandMatch:
        """Match a command line against the stored patterns, and `also` (say,
        the configuration's), together: a line may mix commands allowed by
        either. Stored patterns that allowed a part get their last use
        recorded; a file too busy to record it never refuses a command."""
        with self._lock:
            stored = self._patterns()
            match = match_command(command, (*stored, *also))
            used = sorted(set(match.patterns) & set(stored))
            if used:
                self._record_use(used)
        return match

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise AllowlistError(f"the exec allowlist at {self.path} is closed")
        return self._conn

    def _patterns(self) -> tuple[str, ...]:
        rows = self._connection().execute("SELECT pattern FROM exec_allowlist ORDER BY pattern")
        return tuple(row[0] for row in rows)

    def _record_use(self, patterns: Sequence[str]) -> None:
        marks = ", ".join("?" * len(patterns))
        try:
            self._connection().execute(
                f"UPDATE exec_allowlist SET last_used_at = ? WHERE pattern IN ({marks})",
                (self._clock(), *patterns),
            )
        except sqlite3.OperationalError as e:
            logger.warning("could not record the use of exec allowlist patterns: %s", e)


def _entry(row: tuple[str, str, float, float | None]) -> AllowlistEntry:
    pattern, added_by, added_at, last_used_at = row
    return AllowlistEntry(pattern, AddedBy(added_by), added_at, last_used_at)
