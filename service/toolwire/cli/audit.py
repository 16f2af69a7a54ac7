"""`toolwire audit`: the recent dispatches, from the audit file itself.

It reads the file read-only (SQLite in WAL mode allows it while the server
writes), so looking at the audit needs no running server and cannot change it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from toolwire.audit import DEFAULT_FILENAME, AuditError, AuditRecord, read_entries

_HEADER = ("time", "principal", "tool", "decision", "result", "ms", "rule", "digest")
_DIGEST_CHARS = 12


def add_commands(commands: Any) -> None:
    audit: argparse.ArgumentParser = commands.add_parser(
        "audit", help="show recent tool dispatches from the audit log"
    )
    audit.add_argument(
        "--data-dir", type=Path,
        default=Path(os.environ.get("TOOLWIRE_DATA_DIR", ".toolwire")),
        help="the server's data folder (env TOOLWIRE_DATA_DIR)",
    )  # fmt: skip
    audit.add_argument("--limit", type=_positive, default=20, help="newest N entries (20)")
    audit.add_argument("--principal", help="only this principal's dispatches")
    audit.add_argument("--tool", help="only dispatches of this tool")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(run=_run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _run(args: argparse.Namespace) -> int:
    path = args.data_dir / DEFAULT_FILENAME
    if not path.exists():
        print(
            f"toolwire: no audit log at {path}; the server writes one when it dispatches",
            file=sys.stderr,
        )
        return 1
    try:
        records = read_entries(path, limit=args.limit, principal=args.principal, tool=args.tool)
    except AuditError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 1
    if args.json:
        for record in records:
            print(json.dumps(asdict(record), ensure_ascii=False))
    elif records:
        _print_table([_cells(r) for r in records])
    else:
        print("toolwire: no audit entries match", file=sys.stderr)
    return 0


def _cells(r: AuditRecord) -> tuple[str, ...]:
    return (
        datetime.fromtimestamp(r.at).isoformat(timespec="seconds"),
        r.principal or "-",
        r.tool,
        r.decision,
        "ok" if r.success else r.error_code or "error",
        f"{r.duration_seconds * 1000:.0f}",
        r.rule or "-",
        r.arguments_digest.removeprefix("sha256:")[:_DIGEST_CHARS],
    )


def _print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in [_HEADER, *rows]) for i in range(len(_HEADER))]
    for row in [_HEADER, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
