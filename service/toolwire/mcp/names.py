"""Names of imported MCP tools: `PREFIX__TOOL`, within the tool-name rule.

An MCP tool's name may be anything the server likes; toolwire's names follow
`^[a-zA-Z0-9_-]{1,64}$`. The mapping is deterministic (the same server and
tool always get the same name, across restarts and processes):

- `PREFIX__TOOL` when that is a valid name;
- otherwise every character outside `[a-zA-Z0-9_-]` becomes `_`;
- a name still longer than 64 characters is cut and ends in `_` plus the
  first 8 hex digits of the SHA-256 of the original MCP name, so that two
  long names with a common beginning stay apart.

Two MCP tools that map to the same name are a collision: neither is imported
(`map_names` reports both), since giving the name to one of them would depend
on the order the server lists them in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from toolwire.names import MAX_NAME_LENGTH, NAME_PATTERN

SEPARATOR = "__"
PREFIX_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


def tool_name(prefix: str, mcp_name: str) -> str:
    """The toolwire name of the MCP tool `mcp_name` imported under `prefix`."""
    if not PREFIX_PATTERN.fullmatch(prefix):
        raise ValueError(
            f"MCP import prefix {prefix!r} must start with a letter and use at most 32 "
            "letters, digits, '_' and '-'"
        )
    combined = f"{prefix}{SEPARATOR}{mcp_name}"
    if NAME_PATTERN.fullmatch(combined):
        return combined
    cleaned = _INVALID.sub("_", combined)
    if len(cleaned) <= MAX_NAME_LENGTH and mcp_name:
        return cleaned
    digest = hashlib.sha256(mcp_name.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    return f"{cleaned[: MAX_NAME_LENGTH - _HASH_LENGTH - 1]}_{digest}"


@dataclass(frozen=True, slots=True)
class Collision:
    name: str
    """The toolwire name that more than one MCP tool maps to."""
    mcp_names: tuple[str, ...]

    def describe(self, server: str) -> str:
        tools = ", ".join(repr(n) for n in self.mcp_names)
        return (
            f"MCP server '{server}': tools {tools} all map to the toolwire name "
            f"'{self.name}'; none of them is imported"
        )


@dataclass(frozen=True, slots=True)
class NameMap:
    """Toolwire names to MCP names for one server's tools, and the collisions."""

    to_mcp: dict[str, str] = field(default_factory=dict)
    collisions: tuple[Collision, ...] = ()

    def mcp_name(self, name: str) -> str | None:
        return self.to_mcp.get(name)


def map_names(prefix: str, mcp_names: Iterable[str]) -> NameMap:
    """The names of a server's tools; colliding tools are left out and reported."""
    claims: dict[str, list[str]] = {}
    for mcp_name in mcp_names:
        claimants = claims.setdefault(tool_name(prefix, mcp_name), [])
        if mcp_name not in claimants:
            claimants.append(mcp_name)
    to_mcp = {name: owners[0] for name, owners in claims.items() if len(owners) == 1}
    collisions = tuple(
        Collision(name, tuple(owners)) for name, owners in claims.items() if len(owners) > 1
    )
    return NameMap(to_mcp, collisions)
