"""`toolwire memory`: what an operator does that a model must not.

Approving queued writes to `familiar` blocks and setting a block's permission
work on the memory file directly (SQLite in WAL mode allows it while the server
runs), so no RPC can be talked into approving a model's own writes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolwire.memory import DEFAULT_FILENAME, MemoryStoreError, Permission, SqliteMemoryManager


def add_commands(commands: Any) -> None:
    memory: argparse.ArgumentParser = commands.add_parser(
        "memory", help="review queued memory writes and set block permissions"
    )
    actions = memory.add_subparsers(dest="action", required=True)

    def action(
        name: str, help_text: str, run: Callable[[SqliteMemoryManager, argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        sub.add_argument(
            "--data-dir", type=Path,
            default=Path(os.environ.get("TOOLWIRE_DATA_DIR", ".toolwire")),
            help="the server's data folder (env TOOLWIRE_DATA_DIR)",
        )  # fmt: skip
        sub.set_defaults(run=lambda args: _with_manager(args, run))
        return sub

    pending = action("pending", "list writes waiting for approval", _pending)
    pending.add_argument("--user", required=True)
    listing = action("list", "list a user's memory blocks", _list)
    listing.add_argument("--user", required=True)
    action("approve", "apply a queued write", _approve).add_argument("mutation_id")
    action("reject", "discard a queued write", _reject).add_argument("mutation_id")
    permission = action("set-permission", "make a block read-only, familiar or writable", _set)
    permission.add_argument("--user", required=True)
    permission.add_argument("label")
    permission.add_argument("permission", choices=[p.value for p in Permission])


def _with_manager(
    args: argparse.Namespace, run: Callable[[SqliteMemoryManager, argparse.Namespace], int]
) -> int:
    path = args.data_dir / DEFAULT_FILENAME
    if not path.exists():
        print(f"toolwire: no memory file at {path} (is --data-dir right?)", file=sys.stderr)
        return 2
    try:
        with SqliteMemoryManager(path) as manager:
            return run(manager, args)
    except MemoryStoreError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 1


def _print(models: list[Any]) -> None:
    print(json.dumps([m.model_dump(mode="json") for m in models], indent=2, ensure_ascii=False))


def _pending(manager: SqliteMemoryManager, args: argparse.Namespace) -> int:
    _print(manager.pending(args.user))
    return 0


def _list(manager: SqliteMemoryManager, args: argparse.Namespace) -> int:
    _print(manager.list(args.user))
    return 0


def _approve(manager: SqliteMemoryManager, args: argparse.Namespace) -> int:
    _print([manager.approve(args.mutation_id)])
    return 0


def _reject(manager: SqliteMemoryManager, args: argparse.Namespace) -> int:
    manager.reject(args.mutation_id)
    print(f"rejected {args.mutation_id}")
    return 0


def _set(manager: SqliteMemoryManager, args: argparse.Namespace) -> int:
    _print([manager.set_permission(args.user, args.label, Permission(args.permission))])
    return 0
