"""Tool names: the strictest rule of the model APIs, and free alternatives."""

from __future__ import annotations

import re
from collections.abc import Container

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME_LENGTH = 64


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a tool name, or None when it can."""
    if NAME_PATTERN.fullmatch(name):
        return None
    if not name:
        return "a tool name cannot be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"tool name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
    bad = sorted({c for c in name if not re.fullmatch(r"[a-zA-Z0-9_-]", c)})
    shown = ", ".join(repr(c) for c in bad)
    return (
        f"tool name {name!r} contains {shown}; names may use only letters, digits, "
        "'_' and '-' (^[a-zA-Z0-9_-]{1,64}$)"
    )


def suggest_free_name(name: str, taken: Container[str]) -> str:
    """The first of `name_2`, `name_3`, … that is free and still a valid name."""
    n = 2
    while True:
        suffix = f"_{n}"
        candidate = name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1
