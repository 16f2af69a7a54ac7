"""`toolwire audit` as an operator runs it, against an audit file the server's
writer produced."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from toolwire.audit import (
    DEFAULT_FILENAME,
    AuditRecord,
    Redaction,
    SqliteAuditLog,
    digest_arguments,
    stored_arguments,
)

AT = 1_700_000_000.0


def dispatch(
    n: int,
    principal: str,
    tool: str,
    *,
    decision: str = "allowed",
    rule: str = "",
    error_code: str = "",
) -> AuditRecord:
    arguments = {"n": n, "token": "s3cret"}
    return AuditRecord(
        at=AT + n * 60,
        principal=principal,
        tool=tool,
        arguments_digest=digest_arguments(arguments),
        arguments=stored_arguments(arguments, Redaction.REDACT),
        decision=decision,
        rule=rule,
        duration_seconds=0.01 * n + 0.002,
        success=not error_code,
        error_code=error_code,
        session_id=f"session-{n}",
    )


RECORDS = (
    dispatch(1, "alice", "read_file"),
    dispatch(2, "bob", "exec", decision="denied", rule="no-shell", error_code="denied_by_policy"),
    dispatch(3, "alice", "exec", decision="approved", rule="ask-first"),
    dispatch(4, "alice", "read_file", error_code="timeout"),
)


def local_time(n: int) -> str:
    return datetime.fromtimestamp(AT + n * 60).isoformat(timespec="seconds")


def digest(index: int) -> str:
    """The digest's first 12 hex digits, as the table shows it."""
    return RECORDS[index].arguments_digest.removeprefix("sha256:")[:12]


@pytest.fixture(name="data_dir", scope="module")
def data_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("audit-data")
    with SqliteAuditLog(data / DEFAULT_FILENAME) as log:
        for record in RECORDS:
            log.append(record)
        assert log.flush()
    return data


def audit(
    toolwire_bin: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [toolwire_bin, "audit", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_table_lists_newest_first_with_every_column(toolwire_bin: str, data_dir: Path) -> None:
    result = audit(toolwire_bin, "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.split() == [
        "time",
        "principal",
        "tool",
        "decision",
        "result",
        "ms",
        "rule",
        "digest",
    ]
    rows = [line.split() for line in lines]
    assert rows == [
        [local_time(4), "alice", "read_file", "allowed", "timeout", "42", "-", digest(3)],
        [local_time(3), "alice", "exec", "approved", "ok", "32", "ask-first", digest(2)],
        [local_time(2), "bob", "exec", "denied", "denied_by_policy", "22", "no-shell", digest(1)],
        [local_time(1), "alice", "read_file", "allowed", "ok", "12", "-", digest(0)],
    ]
    assert "s3cret" not in result.stdout


def test_json_lines_carry_the_whole_record(toolwire_bin: str, data_dir: Path) -> None:
    result = audit(toolwire_bin, "--data-dir", str(data_dir), "--json", "--limit", "2")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [AuditRecord(**o) for o in objects] == [RECORDS[3], RECORDS[2]]
    assert json.loads(objects[0]["arguments"]) == {"n": "<number>", "token": "<redacted>"}


def test_filters_by_principal_and_tool(toolwire_bin: str, data_dir: Path) -> None:
    def sessions(*args: str) -> list[str]:
        result = audit(toolwire_bin, "--data-dir", str(data_dir), "--json", *args)
        assert result.returncode == 0, result.stderr
        return [json.loads(line)["session_id"] for line in result.stdout.splitlines()]

    assert sessions("--principal", "alice") == ["session-4", "session-3", "session-1"]
    assert sessions("--tool", "exec") == ["session-3", "session-2"]
    assert sessions("--principal", "alice", "--tool", "exec") == ["session-3"]
    assert sessions("--principal", "carol") == []


def test_data_dir_comes_from_the_environment(toolwire_bin: str, data_dir: Path) -> None:
    env = {**os.environ, "TOOLWIRE_DATA_DIR": str(data_dir)}
    result = audit(toolwire_bin, "--json", "--limit", "1", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session_id"] == "session-4"


def test_no_match_is_not_an_error(toolwire_bin: str, data_dir: Path) -> None:
    result = audit(toolwire_bin, "--data-dir", str(data_dir), "--tool", "missing")
    assert (result.returncode, result.stdout) == (0, "")
    assert "no audit entries match" in result.stderr


def test_a_missing_file_explains_itself(toolwire_bin: str, tmp_path: Path) -> None:
    result = audit(toolwire_bin, "--data-dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        f"no audit log at {tmp_path / DEFAULT_FILENAME}; the server writes one when it dispatches"
        in result.stderr
    )
    assert list(tmp_path.iterdir()) == []


def test_a_bad_limit_is_refused(toolwire_bin: str, data_dir: Path) -> None:
    result = audit(toolwire_bin, "--data-dir", str(data_dir), "--limit", "0")
    assert result.returncode == 2
    assert "--limit" in result.stderr
