"""The audit log: who dispatched which tool with what, and how it ended.

An audit that can stall or fail a dispatch is worse than none, so appending
never touches the disk: `SqliteAuditLog.append` puts the record into a bounded
queue and one daemon thread, which alone owns the SQLite connection, writes the
records in batches. When the disk is slow the queue fills and further records
are dropped (and counted) instead of blocking the event loop; when a write
fails (disk full, database locked) its records are counted as failed and the
writer carries on with the next batch. Both counts are visible, so a lossy
audit is a known state rather than a silent one.

Arguments are what an audit most easily leaks, so by default only their shape
is stored (`Redaction.REDACT`), next to a digest of the exact arguments that
lets an operator check whether two calls were the same without seeing either.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Protocol

from .errors import ToolwireError

__all__ = [
    "DEFAULT_FILENAME",
    "SECRET_KEY_MARKERS",
    "AuditError",
    "AuditLog",
    "AuditRecord",
    "AuditWriter",
    "NullAuditLog",
    "Redaction",
    "SqliteAuditLog",
    "digest_arguments",
    "insert_records",
    "read_entries",
    "stored_arguments",
]

logger = logging.getLogger("toolwire.audit")

DEFAULT_FILENAME: Final = "audit.sqlite"
SECRET_KEY_MARKERS: Final = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "private_key",
)
"""A key whose lowercased name contains one of these never has its value stored."""

REDACTED: Final = "<redacted>"
WARNING_INTERVAL_SECONDS: Final = 60.0
"""Dropped and failed records are logged at most once per interval (with totals),
so a full disk does not also flood the server's log."""
_IDLE_POLL_SECONDS: Final = 1.0


class AuditError(ToolwireError):
    """The audit log cannot be opened or read."""


class Redaction(StrEnum):
    REDACT = "redact"
    """The structure and keys, with every leaf value replaced by its JSON type."""
    FULL = "full"
    """The arguments as given, except values under secret-looking keys."""
    NONE = "none"
    """No arguments at all; the digest still identifies them."""


@dataclass(frozen=True, slots=True)
class AuditRecord:
    at: float
    """Unix time the call started."""
    principal: str
    tool: str
    arguments_digest: str
    """`sha256:<hex>` of the canonical JSON of the arguments (`digest_arguments`)."""
    arguments: str | None
    """The stored form (JSON text) per `Redaction`; None when not stored."""
    decision: str
    """The caller's word for how policy decided, stored as is."""
    rule: str
    """The policy rule that decided; "" when none."""
    duration_seconds: float
    success: bool
    error_code: str
    """"" on success, else an `ErrorCode` value."""
    session_id: str = ""
    user_id: str = ""
    ticket_id: str = ""
    run_id: str = ""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A dispatch as the registry hands it over, arguments as they came.

    Digesting and redacting arguments costs tens of microseconds, more than
    the rest of a dispatch; a `CallRecord` costs next to nothing to build, and
    the log turns it into an `AuditRecord` off the call's path."""

    at: float
    principal: str
    tool: str
    raw_arguments: Mapping[str, Any] | str | None
    redaction: Redaction
    decision: str
    rule: str
    duration_seconds: float
    success: bool
    error_code: str
    session_id: str = ""
    user_id: str = ""
    ticket_id: str = ""
    run_id: str = ""

    def record(self) -> AuditRecord:
        parsed = _parsed(self.raw_arguments)
        return AuditRecord(
            at=self.at,
            principal=self.principal,
            tool=self.tool,
            arguments_digest=_digest(self.raw_arguments, parsed),
            arguments=_stored(self.raw_arguments, parsed, self.redaction),
            decision=self.decision,
            rule=self.rule,
            duration_seconds=self.duration_seconds,
            success=self.success,
            error_code=self.error_code,
            session_id=self.session_id,
            user_id=self.user_id,
            ticket_id=self.ticket_id,
            run_id=self.run_id,
        )


class AuditLog(Protocol):
    def append(self, record: AuditRecord | CallRecord) -> None:
        """Record a dispatch; must return at once and never raise."""
        ...


class NullAuditLog:
    """The audit of a registry that keeps none."""

    def append(self, record: AuditRecord | CallRecord) -> None:
        del record


# -- arguments ----------------------------------------------------------------


class _NotJson:
    """Arguments given as text that does not parse: they are kept as text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _parsed(arguments: Mapping[str, Any] | str | None) -> Any:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return _NotJson(arguments)
    return arguments


def _plain(value: Any) -> Any:
    """JSON-ready data: any mapping becomes a dict with string keys, any
    list or tuple a list, and anything JSON has no type for its `str`."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json_data(arguments: Mapping[str, Any] | str | None, parsed: Any) -> Any:
    """Parsed JSON text is plain already; only a mapping needs `_plain`."""
    return parsed if arguments is None or isinstance(arguments, str) else _plain(parsed)


def digest_arguments(arguments: Mapping[str, Any] | str | None) -> str:
    """`sha256:<hex>` of the canonical JSON of the arguments, the same for any
    key order or whitespace; text that is not JSON is digested as is."""
    return _digest(arguments, _parsed(arguments))


def _digest(arguments: Mapping[str, Any] | str | None, parsed: Any) -> str:
    try:
        data = _utf8(
            parsed.text
            if isinstance(parsed, _NotJson)
            else _canonical(_json_data(arguments, parsed))
        )
    except (ValueError, RecursionError):  # e.g. a self-referencing mapping
        data = _utf8(repr(arguments))
    return "sha256:" + hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=4096)
def _is_secret(key: str) -> bool:
    """Cached: tools repeat the same few argument names call after call."""
    lowered = key.lower()
    return any(marker in lowered for marker in SECRET_KEY_MARKERS)


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if _is_secret(k) else _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if value is None:
        return "<null>"
    if isinstance(value, bool):
        return "<boolean>"
    if isinstance(value, int | float):
        return "<number>"
    return f"<string, {len(value)} {'char' if len(value) == 1 else 'chars'}>"


def _without_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if _is_secret(k) else _without_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def stored_arguments(arguments: Mapping[str, Any] | str | None, redaction: Redaction) -> str | None:
    """The arguments as the audit keeps them (JSON text), or None.

    Values under secret-looking keys are `"<redacted>"` in both stored modes
    (in `REDACT` even their length stays out of the log). Text that is not JSON
    cannot be searched for such keys, so it is kept as a placeholder only.
    """
    if redaction is Redaction.NONE:
        return None
    return _stored(arguments, _parsed(arguments), redaction)


def _stored(
    arguments: Mapping[str, Any] | str | None, parsed: Any, redaction: Redaction
) -> str | None:
    if redaction is Redaction.NONE:
        return None
    if isinstance(parsed, _NotJson):
        return json.dumps(f"<invalid JSON, {len(parsed.text)} chars>")
    try:
        plain = _json_data(arguments, parsed)
        stored = _shape(plain) if redaction is Redaction.REDACT else _without_secrets(plain)
        return json.dumps(stored, ensure_ascii=False)
    except (ValueError, RecursionError):
        return json.dumps("<unserializable arguments>")


# -- storage ------------------------------------------------------------------

_SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        principal TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments_digest TEXT NOT NULL,
        arguments TEXT,
        decision TEXT NOT NULL,
        rule TEXT NOT NULL,
        duration_seconds REAL NOT NULL,
        success INTEGER NOT NULL,
        error_code TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        ticket_id TEXT NOT NULL,
        run_id TEXT NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at)",
)
_COLUMNS: Final = (
    "at, principal, tool, arguments_digest, arguments, decision, rule, duration_seconds, "
    "success, error_code, session_id, user_id, ticket_id, run_id"
)
_INSERT: Final = f"INSERT INTO audit ({_COLUMNS}) VALUES ({', '.join('?' * 14)})"

AuditWriter = Callable[[sqlite3.Connection, Sequence[AuditRecord]], None]
"""Writes one batch on the writer thread's connection; raising fails the batch."""


def _row(r: AuditRecord) -> tuple[object, ...]:
    return (
        r.at, r.principal, r.tool, r.arguments_digest, r.arguments, r.decision, r.rule,
        r.duration_seconds, int(r.success), r.error_code, r.session_id, r.user_id,
        r.ticket_id, r.run_id,
    )  # fmt: skip


def insert_records(connection: sqlite3.Connection, records: Sequence[AuditRecord]) -> None:
    """The default `AuditWriter`: the whole batch in one transaction."""
    with connection:
        connection.executemany(_INSERT, [_row(r) for r in records])


def _open(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, check_same_thread=False, timeout=5.0)
    except (OSError, sqlite3.Error) as e:
        raise AuditError(f"cannot open the audit log at {path}: {e}") from e
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        with connection:
            for statement in _SCHEMA:
                connection.execute(statement)
    except sqlite3.Error as e:
        connection.close()
        raise AuditError(f"cannot create the audit table in {path}: {e}") from e
    return connection


@dataclass(frozen=True, slots=True)
class _Barrier:
    """Queued behind the records it waits for; set once they are written or failed."""

    reached: threading.Event
    stop: bool = False


class _Throttle:
    """At most one warning per interval, so a persistent fault is logged, not spammed."""

    __slots__ = ("_interval", "_last")

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last = float("-inf")

    def ready(self) -> bool:
        now = time.monotonic()
        if now - self._last < self._interval:
            return False
        self._last = now
        return True


class SqliteAuditLog:
    """An `AuditLog` in a SQLite file, written by a background thread.

    The connection is opened (and the schema created) in the constructor, so a
    bad path fails at start-up with an `AuditError`; from then on only the
    writer thread uses it. `append` takes no lock the writer holds while it
    writes: `queue.Queue` guards its deque only for the moment of a put or get.
    """

    def __init__(
        self,
        path: Path,
        *,
        queue_size: int = 10_000,
        batch_size: int = 256,
        writer: AuditWriter | None = None,
    ) -> None:
        if queue_size < 1 or batch_size < 1:
            raise ValueError("queue_size and batch_size must be at least 1")
        self.path = path
        self._batch_size = batch_size
        self._write_batch: AuditWriter = writer or insert_records
        self._queue: queue.Queue[AuditRecord | CallRecord | _Barrier] = queue.Queue(
            maxsize=queue_size
        )
        self._counts = threading.Lock()
        self._dropped = 0
        self._failed = 0
        self._drop_warning = _Throttle(WARNING_INTERVAL_SECONDS)
        self._failure_warning = _Throttle(WARNING_INTERVAL_SECONDS)
        self._closed = False
        self._stopping = threading.Event()
        self._connection = _open(path)
        self._thread = threading.Thread(target=self._run, name="toolwire-audit", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Records never queued: the queue was full, or the log was closed."""
        with self._counts:
            return self._dropped

    @property
    def failed(self) -> int:
        """Records whose write raised."""
        with self._counts:
            return self._failed

    def append(self, record: AuditRecord | CallRecord) -> None:
        try:
            if not self._closed:
                self._queue.put_nowait(record)
                return
            reason = "the audit log is closed"
        except queue.Full:
            reason = "the audit queue is full (slow disk?)"
        except Exception as e:
            reason = f"queueing failed: {e!r}"
        with self._counts:
            self._dropped += 1
            dropped = self._dropped
        if self._drop_warning.ready():
            logger.warning("audit record dropped: %s; %d dropped so far", reason, dropped)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every record appended so far is written or failed."""
        return self._barrier(_Barrier(threading.Event()), time.monotonic() + timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop the writer; give up after `timeout`.

        A writer still stuck after the timeout finishes the queue on its own
        and then exits (it is a daemon thread, so it never holds up exit).
        """
        deadline = time.monotonic() + timeout
        if not self._closed:
            self._closed = True
            if not self._barrier(_Barrier(threading.Event(), stop=True), deadline):
                self._stopping.set()  # the writer exits once it has emptied the queue
                logger.warning(
                    "the audit writer did not finish within %.1fs; %d records still queued",
                    timeout,
                    self._queue.qsize(),
                )
        self._thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> SqliteAuditLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _barrier(self, barrier: _Barrier, deadline: float) -> bool:
        if not self._thread.is_alive():
            return self._queue.empty()
        try:
            self._queue.put(barrier, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            return False
        return barrier.reached.wait(max(0.0, deadline - time.monotonic()))

    def _run(self) -> None:
        try:
            while True:
                try:
                    item = self._queue.get(timeout=_IDLE_POLL_SECONDS)
                except queue.Empty:
                    if self._stopping.is_set():
                        return
                    continue
                if not self._drain(item):
                    return
        finally:
            self._connection.close()
            self._drop_leftovers()

    def _drop_leftovers(self) -> None:
        """Count records that raced past `close` into a queue nobody reads."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, AuditRecord | CallRecord):
                with self._counts:
                    self._dropped += 1

    def _drain(self, item: AuditRecord | CallRecord | _Barrier) -> bool:
        """Write `item` and whatever else is queued; False once told to stop."""
        batch: list[AuditRecord] = []
        while True:
            if isinstance(item, _Barrier):
                self._write(batch)
                batch = []
                item.reached.set()
                if item.stop:
                    return False
            else:
                batch.append(item if isinstance(item, AuditRecord) else item.record())
                if len(batch) >= self._batch_size:
                    self._write(batch)
                    batch = []
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                self._write(batch)
                return True

    def _write(self, batch: list[AuditRecord]) -> None:
        if not batch:
            return
        try:
            self._write_batch(self._connection, batch)
        except Exception as e:
            try:
                if self._connection.in_transaction:
                    self._connection.rollback()
            except sqlite3.Error:
                pass
            with self._counts:
                self._failed += len(batch)
                failed = self._failed
            if self._failure_warning.ready():
                logger.error(
                    "writing %d audit records to %s failed: %r; %d failed so far",
                    len(batch),
                    self.path,
                    e,
                    failed,
                )


# -- reading ------------------------------------------------------------------


def read_entries(
    path: Path, *, limit: int = 50, principal: str | None = None, tool: str | None = None
) -> list[AuditRecord]:
    """The newest `limit` records, optionally of one principal and/or tool.

    Opens the file read-only, so reading while the server writes is safe and
    never creates a file where there was none.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if not path.is_file():
        raise AuditError(f"no audit log at {path}")
    where: list[str] = []
    parameters: list[object] = []
    if principal is not None:
        where.append("principal = ?")
        parameters.append(principal)
    if tool is not None:
        where.append("tool = ?")
        parameters.append(tool)
    query = (
        f"SELECT {_COLUMNS} FROM audit"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY at DESC, id DESC LIMIT ?"
    )
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            rows = connection.execute(query, (*parameters, limit)).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as e:
        raise AuditError(f"cannot read the audit log at {path}: {e}") from e
    return [_record(row) for row in rows]


def _record(row: Sequence[Any]) -> AuditRecord:
    values = list(row)  # in field order, as `_COLUMNS` lists them
    values[8] = bool(values[8])
    return AuditRecord(*values)
