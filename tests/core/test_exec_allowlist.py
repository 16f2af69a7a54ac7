"""The exec allowlist store: patterns kept in the data folder, their last use
recorded, and changes from another process seen on the next check."""

from __future__ import annotations

import fnmatch
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolwire.errors import ToolwireError
from toolwire.policy.allowlist import (
    DEFAULT_FILENAME,
    AddedBy,
    AllowlistEntry,
    AllowlistError,
    ExecAllowlist,
    exact_pattern,
    exact_patterns,
)
from toolwire.policy.commands import match_command


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / DEFAULT_FILENAME


@pytest.fixture
def allowlist(path: Path, clock: Clock) -> Iterator[ExecAllowlist]:
    with ExecAllowlist(path, clock=clock) as store:
        yield store


def test_creates_its_folder_and_starts_empty(allowlist: ExecAllowlist, path: Path) -> None:
    assert path.exists()
    assert allowlist.entries() == []
    assert allowlist.patterns() == ()


def test_add_list_remove(allowlist: ExecAllowlist, clock: Clock) -> None:
    assert allowlist.add("ls *") == AllowlistEntry("ls *", AddedBy.USER, 1_000.0, None)
    clock.now = 1_001.0
    allowlist.add("git status*", AddedBy.AUTO)
    assert allowlist.entries() == [
        AllowlistEntry("git status*", AddedBy.AUTO, 1_001.0, None),
        AllowlistEntry("ls *", AddedBy.USER, 1_000.0, None),
    ]
    assert allowlist.patterns() == ("git status*", "ls *")
    assert allowlist.remove("ls *") is True
    assert allowlist.remove("ls *") is False
    assert allowlist.patterns() == ("git status*",)


def test_adding_a_stored_pattern_keeps_the_original(allowlist: ExecAllowlist, clock: Clock) -> None:
    first = allowlist.add("ls *", AddedBy.USER)
    clock.now = 2_000.0
    assert allowlist.add("ls *", AddedBy.AUTO) == first
    assert len(allowlist.entries()) == 1


@pytest.mark.parametrize("pattern", ["", "  ", "ls\nrm", " ls"])
def test_invalid_patterns_are_refused_with_the_problem(
    allowlist: ExecAllowlist, pattern: str
) -> None:
    with pytest.raises(AllowlistError) as raised:
        allowlist.add(pattern)
    assert isinstance(raised.value, ToolwireError)
    assert "pattern" in str(raised.value)
    assert allowlist.entries() == []


def test_check_records_the_last_use_of_each_pattern_that_allowed_a_part(
    allowlist: ExecAllowlist, clock: Clock
) -> None:
    for pattern in ("ls *", "wc *", "git status*"):
        allowlist.add(pattern)
    clock.now = 1_500.0
    match = allowlist.check("ls -la | wc -l")
    assert match.matched
    assert match.patterns == ("ls *", "wc *")
    used = {e.pattern: e.last_used_at for e in allowlist.entries()}
    assert used == {"ls *": 1_500.0, "wc *": 1_500.0, "git status*": None}


def test_a_refused_check_records_nothing(allowlist: ExecAllowlist) -> None:
    allowlist.add("ls *")
    match = allowlist.check("ls -la; rm -rf /")
    assert not match.matched
    assert match.reason == "'rm -rf /' (the 2nd command of the line) matches no allowlist pattern"
    assert allowlist.entries()[0].last_used_at is None


def test_check_with_no_patterns_refuses(allowlist: ExecAllowlist) -> None:
    assert allowlist.check("ls").reason == "'ls' matches no allowlist pattern"


def test_patterns_from_elsewhere_join_the_stored_ones(
    allowlist: ExecAllowlist, clock: Clock
) -> None:
    allowlist.add("ls *")
    clock.now = 1_200.0
    match = allowlist.check("ls -la && pwd", also=["pwd"])
    assert match.patterns == ("ls *", "pwd")
    assert [e.last_used_at for e in allowlist.entries()] == [1_200.0]


def test_a_pattern_added_by_another_process_counts_on_the_next_check(
    allowlist: ExecAllowlist, path: Path
) -> None:
    assert not allowlist.check("make test").matched
    with ExecAllowlist(path) as cli:
        cli.add("make *")
        assert allowlist.check("make test").matched
        cli.remove("make *")
    assert not allowlist.check("make test").matched


def test_the_last_use_is_visible_to_another_process(
    allowlist: ExecAllowlist, path: Path, clock: Clock
) -> None:
    allowlist.add("ls")
    clock.now = 1_234.0
    allowlist.check("ls")
    with ExecAllowlist(path) as other:
        assert other.entries()[0].last_used_at == 1_234.0


def test_a_busy_file_does_not_refuse_a_matching_command(
    allowlist: ExecAllowlist,
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    allowlist.add("ls")
    monkeypatch.setattr("toolwire.policy.allowlist.BUSY_TIMEOUT_SECONDS", 0.0)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        with ExecAllowlist(path) as busy:
            assert busy.check("ls").matched
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "could not record the use" in caplog.text
    assert allowlist.entries()[0].last_used_at is None


def test_checks_from_many_threads_share_one_connection(allowlist: ExecAllowlist) -> None:
    allowlist.add("ls *")
    results: list[bool] = []

    def check() -> None:
        for _ in range(50):
            results.append(allowlist.check("ls -la").matched)

    threads = [threading.Thread(target=check) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 200


def test_a_closed_store_says_so(path: Path) -> None:
    store = ExecAllowlist(path)
    store.close()
    store.close()
    with pytest.raises(AllowlistError, match="closed"):
        store.patterns()


def test_exact_pattern_escapes_glob_characters() -> None:
    assert exact_pattern("  ls *.py [a]?  ") == "ls [*].py [[]a][?]"
    assert fnmatch.fnmatchcase("ls *.py [a]?", exact_pattern("ls *.py [a]?"))
    assert not fnmatch.fnmatchcase("ls x.py [a]?", exact_pattern("ls *.py [a]?"))


def test_exact_patterns_cover_each_simple_command_of_a_line() -> None:
    line = "git diff *.py | grep -c x"
    patterns = exact_patterns(line)
    assert patterns == ("git diff [*].py", "grep -c x")
    assert match_command(line, patterns).matched
    assert exact_patterns("ls $(x)") == ()


def test_remembering_an_approved_command_stores_a_valid_pattern(
    allowlist: ExecAllowlist,
) -> None:
    command = "echo 'two\nlines' *"
    entry = allowlist.add(exact_pattern(command), AddedBy.AUTO)
    assert allowlist.check(command).patterns == (entry.pattern,)


_command_text = st.text(
    alphabet=st.characters(exclude_characters="\0\n", exclude_categories=("Cs",)), min_size=1
).map(lambda s: s.strip(" \t"))


@given(_command_text, _command_text)
def test_an_exact_pattern_matches_its_command_and_no_other(command: str, other: str) -> None:
    pattern = exact_pattern(command)
    assert fnmatch.fnmatchcase(command, pattern)
    assert fnmatch.fnmatchcase(other, pattern) == (other == command)
