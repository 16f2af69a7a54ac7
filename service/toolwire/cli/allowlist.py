"""Placeholder, replaced by the command's module."""

from __future__ import annotations

from typing import Any


def add_commands(commands: Any) -> None:
    del commands
