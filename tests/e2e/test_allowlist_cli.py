"""`toolwire exec-allowlist`, run as the installed console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolwire.policy.allowlist import DEFAULT_FILENAME, ExecAllowlist

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def run_cli(
    *args: str, data_dir: Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TOOLWIRE_DATA_DIR"}
    if data_dir is not None:
        env["TOOLWIRE_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [TOOLWIRE, "exec-allowlist", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def fields(line: str) -> list[str]:
    return line.split("\t")


def test_add_list_and_remove(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path))
    added = run_cli("add", "git status*", *data)
    assert added.returncode == 0, added.stderr
    pattern, added_by, added_at, last_used = fields(added.stdout.strip())
    assert (pattern, added_by, last_used) == ("git status*", "user", "last used never")
    assert added_at.startswith("added 20")

    assert run_cli("add", "ls *", *data).returncode == 0
    listing = run_cli("list", *data)
    assert listing.returncode == 0
    assert [fields(line)[0] for line in listing.stdout.splitlines()] == ["git status*", "ls *"]

    removed = run_cli("remove", "ls *", *data)
    assert (removed.returncode, removed.stdout) == (0, "removed ls *\n")
    assert [fields(line)[0] for line in run_cli("list", *data).stdout.splitlines()] == [
        "git status*"
    ]


def test_list_shows_the_last_use(tmp_path: Path) -> None:
    with ExecAllowlist(tmp_path / DEFAULT_FILENAME, clock=lambda: 1_700_000_000.0) as allowlist:
        allowlist.add("ls *")
        assert allowlist.check("ls -la").matched
    listing = run_cli("list", "--data-dir", str(tmp_path))
    assert fields(listing.stdout.strip()) == [
        "ls *",
        "user",
        "added 2023-11-14T22:13:20+00:00",
        "last used 2023-11-14T22:13:20+00:00",
    ]


def test_an_invalid_pattern_exits_2_with_the_problem(tmp_path: Path) -> None:
    result = run_cli("add", "ls\nrm", "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "newline" in result.stderr
    assert result.stdout == ""


def test_removing_an_unknown_pattern_exits_1(tmp_path: Path) -> None:
    assert run_cli("add", "ls *", "--data-dir", str(tmp_path)).returncode == 0
    result = run_cli("remove", "rm *", "--data-dir", str(tmp_path))
    assert result.returncode == 1
    assert "no pattern 'rm *'" in result.stderr


def test_looking_at_a_missing_allowlist_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    listing = run_cli("list", "--data-dir", str(missing))
    assert (listing.returncode, listing.stdout) == (0, "")
    assert "no exec allowlist" in listing.stderr
    assert run_cli("remove", "ls", "--data-dir", str(missing)).returncode == 1
    assert not missing.exists()


def test_the_data_dir_comes_from_the_environment_or_defaults(tmp_path: Path) -> None:
    assert run_cli("add", "ls", data_dir=tmp_path / "env").returncode == 0
    assert (tmp_path / "env" / DEFAULT_FILENAME).exists()
    assert run_cli("add", "pwd", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".toolwire" / DEFAULT_FILENAME).exists()


def test_a_pattern_added_while_the_allowlist_is_open_counts_at_once(tmp_path: Path) -> None:
    with ExecAllowlist(tmp_path / DEFAULT_FILENAME) as served:
        assert not served.check("make test").matched
        assert run_cli("add", "make *", "--data-dir", str(tmp_path)).returncode == 0
        assert served.check("make test").matched
