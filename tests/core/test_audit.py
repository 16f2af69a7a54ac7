"""The audit log: digests, redaction, and a writer that neither blocks nor
loses a dispatch when the disk is slow or failing."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from toolwire.audit import (
    AuditError,
    AuditRecord,
    CallRecord,
    NullAuditLog,
    Redaction,
    SqliteAuditLog,
    digest_arguments,
    insert_records,
    read_entries,
    stored_arguments,
)

WAIT = 30.0
"""Generous bound for waits that normally end at once; never a timing assertion."""


def record(
    n: int, *, principal: str = "alice", tool: str = "read_file", **fields: object
) -> AuditRecord:
    base = AuditRecord(
        at=1_700_000_000.0 + n,
        principal=principal,
        tool=tool,
        arguments_digest=digest_arguments({"n": n}),
        arguments=stored_arguments({"n": n}, Redaction.FULL),
        decision="allowed",
        rule="",
        duration_seconds=0.25,
        success=True,
        error_code="",
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def numbers(records: Sequence[AuditRecord]) -> list[int]:
    return [json.loads(r.arguments or "{}")["n"] for r in records]


# -- digests and redaction ----------------------------------------------------


def test_digest_ignores_key_order_and_whitespace() -> None:
    a = digest_arguments({"b": [1, {"y": 2, "x": "é"}], "a": None})
    b = digest_arguments('{ "a" : null, "b": [1, {"x": "é", "y": 2}] }')
    assert a == b
    assert a.startswith("sha256:") and len(a) == len("sha256:") + 64
    assert (
        digest_arguments({"b": [{"x": "é", "y": 2}, 1], "a": None}) != a
    )  # order in arrays counts


def test_empty_arguments_digest_as_an_empty_object() -> None:
    assert digest_arguments(None) == digest_arguments("") == digest_arguments({})
    assert digest_arguments("{}") == digest_arguments({})


def test_invalid_json_is_digested_as_its_text() -> None:
    import hashlib

    text = '{"path": "/etc/passwd"'  # cut off
    assert digest_arguments(text) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert digest_arguments("\ud800 not json").startswith("sha256:")  # lone surrogate
    assert stored_arguments(text, Redaction.REDACT) == '"<invalid JSON, 22 chars>"'
    assert stored_arguments(text, Redaction.FULL) == '"<invalid JSON, 22 chars>"'


def test_digest_and_storage_survive_values_json_has_no_type_for() -> None:
    odd: Any = {"when": object(), 3: b"bytes", "tuple": (1, 2)}
    assert digest_arguments(odd).startswith("sha256:")
    stored = json.loads(stored_arguments(odd, Redaction.FULL) or "null")
    assert stored["3"].startswith("b'") and stored["tuple"] == [1, 2]


def test_redact_keeps_structure_and_types_only() -> None:
    arguments = {
        "path": "/home/alice/notes.txt",
        "options": {"recursive": True, "depth": 3, "ratio": 0.5, "filter": None},
        "names": ["a", "bc", {"deep": "x"}],
    }
    assert json.loads(stored_arguments(arguments, Redaction.REDACT) or "null") == {
        "path": "<string, 21 chars>",
        "options": {
            "recursive": "<boolean>",
            "depth": "<number>",
            "ratio": "<number>",
            "filter": "<null>",
        },
        "names": ["<string, 1 char>", "<string, 2 chars>", {"deep": "<string, 1 char>"}],
    }


def test_redact_hides_even_the_length_of_secrets() -> None:
    stored = json.loads(stored_arguments({"Api_Key": "abc", "n": 1}, Redaction.REDACT) or "null")
    assert stored == {"Api_Key": "<redacted>", "n": "<number>"}


def test_full_keeps_values_but_never_secrets_at_any_depth() -> None:
    arguments = {
        "url": "https://example.test",
        "headers": {"Authorization": "Bearer xyz", "Accept": "text/html"},
        "auth": [{"user": "bob", "PASSWORD": "hunter2"}, {"db_passwd": "p"}],
        "client_secret": {"nested": "whole value goes"},
        "GitHubToken": "t",
        "apikey": 1,
        "service_credentials": ["c"],
        "ssh_private_key": "k",
        "count": 2,
    }
    assert json.loads(stored_arguments(json.dumps(arguments), Redaction.FULL) or "null") == {
        "url": "https://example.test",
        "headers": {"Authorization": "<redacted>", "Accept": "text/html"},
        "auth": [{"user": "bob", "PASSWORD": "<redacted>"}, {"db_passwd": "<redacted>"}],
        "client_secret": "<redacted>",
        "GitHubToken": "<redacted>",
        "apikey": "<redacted>",
        "service_credentials": "<redacted>",
        "ssh_private_key": "<redacted>",
        "count": 2,
    }


def test_none_stores_nothing_and_empty_arguments_store_an_empty_object() -> None:
    assert stored_arguments({"password": "x"}, Redaction.NONE) is None
    assert stored_arguments("not json", Redaction.NONE) is None
    assert stored_arguments(None, Redaction.FULL) == "{}"
    assert stored_arguments("", Redaction.REDACT) == "{}"


def test_null_audit_log_accepts_anything() -> None:
    NullAuditLog().append(record(1))


# -- writing and reading ------------------------------------------------------


def test_records_read_back_newest_first_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "audit.sqlite"  # the folder is created
    full = record(
        7,
        decision="denied",
        rule="no-shell",
        success=False,
        error_code="denied_by_policy",
        session_id="s",
        user_id="u",
        ticket_id="t",
        run_id="r",
        arguments=None,
    )
    with SqliteAuditLog(path) as log:
        for r in (record(1), full, record(3)):
            log.append(r)
        assert log.flush(WAIT)
        assert len(read_entries(path)) == 3  # readable while the writer holds the file
    entries = read_entries(path)
    assert [e.at for e in entries] == [full.at, 1_700_000_003.0, 1_700_000_001.0]
    assert entries[0] == full
    assert (log.dropped, log.failed) == (0, 0)


def test_filters_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    with SqliteAuditLog(path, batch_size=3) as log:
        for n in range(10):
            log.append(record(n, principal="alice" if n % 2 else "bob", tool=f"t{n % 3}"))
    assert numbers(read_entries(path, limit=3)) == [9, 8, 7]
    assert numbers(read_entries(path, principal="alice")) == [9, 7, 5, 3, 1]
    assert numbers(read_entries(path, tool="t0")) == [9, 6, 3, 0]
    assert numbers(read_entries(path, principal="bob", tool="t0", limit=2)) == [6, 0]
    assert read_entries(path, principal="carol") == []


def test_appends_from_many_threads_are_all_written(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    start = threading.Barrier(4)

    def appender(base: int) -> None:
        start.wait(WAIT)
        for n in range(base, base + 250):
            log.append(record(n))

    with SqliteAuditLog(path, batch_size=64) as log:
        threads = [threading.Thread(target=appender, args=(i * 1000,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        assert log.flush(WAIT)
    assert len(read_entries(path, limit=10_000)) == 1000
    assert log.dropped == 0


def test_an_unusable_path_raises_an_audit_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditError, match=re.escape(str(blocker / "audit.sqlite"))):
        SqliteAuditLog(blocker / "audit.sqlite")
    with pytest.raises(AuditError, match=re.escape(str(tmp_path))):
        SqliteAuditLog(tmp_path)  # a folder, not a database
    not_audit = tmp_path / "other.sqlite"
    sqlite3.connect(not_audit).execute("CREATE VIEW audit AS SELECT 1").connection.close()
    with pytest.raises(AuditError, match=r"other\.sqlite"):
        SqliteAuditLog(not_audit)


def test_reading_a_missing_file_raises_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="no audit log"):
        read_entries(tmp_path / "audit.sqlite")
    assert list(tmp_path.iterdir()) == []


# -- a failing or slow disk ---------------------------------------------------


def test_a_failing_write_is_counted_and_later_records_are_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.sqlite"
    disk_full = threading.Event()
    disk_full.set()

    def writer(connection: sqlite3.Connection, records: Sequence[AuditRecord]) -> None:
        if disk_full.is_set():
            connection.execute("BEGIN")  # a half-done transaction must not linger
            raise sqlite3.OperationalError("database or disk is full")
        insert_records(connection, records)

    caplog.set_level(logging.ERROR, logger="toolwire.audit")
    with SqliteAuditLog(path, writer=writer) as log:
        log.append(record(1))
        log.append(record(2))
        assert log.flush(WAIT)
        assert log.failed == 2
        disk_full.clear()
        log.append(record(3))
        assert log.flush(WAIT)
    assert numbers(read_entries(path)) == [3]
    assert (log.failed, log.dropped) == (2, 0)
    assert "database or disk is full" in caplog.text


def test_a_writer_raising_anything_does_not_stop_the_log(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    calls = 0

    def writer(connection: sqlite3.Connection, records: Sequence[AuditRecord]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("unexpected")
        insert_records(connection, records)

    with SqliteAuditLog(path, writer=writer) as log:
        log.append(record(1))
        assert log.flush(WAIT)
        log.append(record(2))
        assert log.flush(WAIT)
    assert numbers(read_entries(path)) == [2]
    assert log.failed == 1


class SlowDisk:
    """A writer stuck until released; `entered` is set while it is stuck."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def __call__(self, connection: sqlite3.Connection, records: Sequence[AuditRecord]) -> None:
        self.entered.set()
        self.release.wait()
        insert_records(connection, records)
        self.finished.set()


def test_a_slow_disk_fills_the_queue_and_drops_instead_of_blocking(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.sqlite"
    disk = SlowDisk()
    log = SqliteAuditLog(path, queue_size=4, batch_size=100, writer=disk)
    try:
        log.append(record(0))
        assert disk.entered.wait(WAIT)  # the writer holds record 0 and is stuck

        appended = threading.Event()

        def burst() -> None:
            for n in range(1, 11):
                log.append(record(n))
            appended.set()

        caplog.set_level(logging.WARNING, logger="toolwire.audit")
        threading.Thread(target=burst, daemon=True).start()
        assert appended.wait(WAIT), "append blocked behind a stuck writer"
        assert not disk.release.is_set()
        assert log.dropped == 6  # 1..4 queued, 5..10 dropped
        assert caplog.text.count("audit record dropped") == 1  # throttled, not per record
        assert not log.flush(0.05)  # the queue is full and the writer stuck

        disk.release.set()
        assert log.flush(WAIT)
    finally:
        disk.release.set()
        log.close(WAIT)
    assert numbers(read_entries(path)) == [4, 3, 2, 1, 0]
    assert (log.dropped, log.failed) == (6, 0)


def test_close_with_a_stuck_writer_returns_after_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    disk = SlowDisk()
    log = SqliteAuditLog(path, queue_size=2, writer=disk)
    log.append(record(0))
    assert disk.entered.wait(WAIT)
    log.append(record(1))
    log.append(record(2))  # the queue is now full

    closed = threading.Event()

    def close() -> None:
        log.close(timeout=0.1)
        closed.set()

    threading.Thread(target=close, daemon=True).start()
    assert closed.wait(WAIT), "close hung on a stuck writer"
    assert not disk.release.is_set()
    log.append(record(3))
    assert log.dropped == 1  # appended after close

    disk.finished.clear()
    disk.release.set()  # the writer finishes what was queued before close, then exits
    log.close(WAIT)  # idempotent; waits for the exit this time
    assert numbers(read_entries(path)) == [2, 1, 0]
    assert (log.dropped, log.failed) == (1, 0)
    assert log.flush(0.0)  # nothing left to write, and the writer is gone


def test_close_is_idempotent_and_drops_later_appends(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    log = SqliteAuditLog(path)
    log.append(record(1))
    log.close()
    log.close()
    log.append(record(2))
    assert log.dropped == 1
    assert numbers(read_entries(path)) == [1]


def test_a_call_record_is_digested_and_redacted_by_the_writer(tmp_path: Path) -> None:
    """What the registry appends: raw arguments, turned into a record off the call's path."""
    raw = '{"password": "hunter2", "query": "tides"}'
    call = CallRecord(
        at=1.0,
        principal="agent",
        tool="search",
        raw_arguments=raw,
        redaction=Redaction.REDACT,
        decision="allowed",
        rule="",
        duration_seconds=0.01,
        success=True,
        error_code="",
        run_id="r1",
    )
    with SqliteAuditLog(tmp_path / "audit.sqlite") as log:
        log.append(call)
        assert log.flush()
    [stored] = read_entries(tmp_path / "audit.sqlite")
    assert stored.arguments_digest == digest_arguments(raw)
    assert stored.arguments == stored_arguments(raw, Redaction.REDACT)
    assert "hunter2" not in (stored.arguments or "")
    assert (stored.principal, stored.run_id) == ("agent", "r1")
