"""`toolwire exec-allowlist`: the command patterns `exec` may run in allowlist
mode.

It works on the allowlist file directly (SQLite in WAL mode, shared with a
running server), so a pattern added here counts from the server's next exec
call, and no RPC can be talked into widening the list.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolwire.policy.allowlist import (
    DEFAULT_FILENAME,
    AllowlistEntry,
    AllowlistError,
    ExecAllowlist,
)

Run = Callable[[ExecAllowlist, argparse.Namespace], int]


def add_commands(commands: Any) -> None:
    allowlist: argparse.ArgumentParser = commands.add_parser(
        "exec-allowlist", help="list, add or remove the command patterns exec may run"
    )
    actions = allowlist.add_subparsers(dest="action", required=True)

    def action(
        name: str, help_text: str, run: Run, *, missing: int | None
    ) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        sub.add_argument(
            "--data-dir", type=Path,
            default=Path(os.environ.get("TOOLWIRE_DATA_DIR", ".toolwire")),
            help="the server's data folder (env TOOLWIRE_DATA_DIR)",
        )  # fmt: skip
        sub.set_defaults(run=lambda args: _with_allowlist(args, run, missing=missing))
        return sub

    listing = "show the patterns, who added them and when they were last used"
    action("list", listing, _list, missing=0)
    add = action("add", "allow the commands matching a glob pattern", _add, missing=None)
    add.add_argument("pattern", help="for example 'git status*' (`*` matches spaces too)")
    remove = action("remove", "stop allowing a pattern", _remove, missing=1)
    remove.add_argument("pattern")


def _with_allowlist(args: argparse.Namespace, run: Run, *, missing: int | None) -> int:
    """`missing`: the exit code when there is no allowlist file, or None to
    create it (looking must not leave a file in a mistyped --data-dir)."""
    path = args.data_dir / DEFAULT_FILENAME
    if missing is not None and not path.exists():
        print(f"toolwire: no exec allowlist at {path} (is --data-dir right?)", file=sys.stderr)
        return missing
    try:
        with ExecAllowlist(path) as allowlist:
            return run(allowlist, args)
    except AllowlistError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2


def _time(moment: float | None) -> str:
    if moment is None:
        return "never"
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def _line(entry: AllowlistEntry) -> str:
    """Tab-separated: patterns hold spaces."""
    added, used = _time(entry.added_at), _time(entry.last_used_at)
    return "\t".join((entry.pattern, entry.added_by, f"added {added}", f"last used {used}"))


def _list(allowlist: ExecAllowlist, args: argparse.Namespace) -> int:
    entries = allowlist.entries()
    for entry in entries:
        print(_line(entry))
    if not entries:
        print(f"toolwire: the exec allowlist at {allowlist.path} is empty", file=sys.stderr)
    return 0


def _add(allowlist: ExecAllowlist, args: argparse.Namespace) -> int:
    print(_line(allowlist.add(args.pattern)))
    return 0


def _remove(allowlist: ExecAllowlist, args: argparse.Namespace) -> int:
    if not allowlist.remove(args.pattern):
        print(
            f"toolwire: no pattern {args.pattern!r} in the exec allowlist at {allowlist.path}; "
            "`toolwire exec-allowlist list` shows them",
            file=sys.stderr,
        )
        return 1
    print(f"removed {args.pattern}")
    return 0
