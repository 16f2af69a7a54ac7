"""toolwire's built-in tools, one module per group, and their assembly.

`builtin_tools(settings)` builds every enabled group over its default port
(the SQLite memory store, the workspace folder, the guarded HTTP client):
the embedded defaults `toolwire serve` starts with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolwire.builtin.code import CodeRunner, code_tools
from toolwire.builtin.exec import exec_tools
from toolwire.builtin.files import DEFAULT_MAX_READ_BYTES, file_tools
from toolwire.builtin.http import http_tools
from toolwire.builtin.memory import memory_tools
from toolwire.builtin.web import web_tools
from toolwire.memory import DEFAULT_FILENAME, SqliteMemoryManager
from toolwire.tools import Tool
from toolwire.web import AddressPolicy, HttpFetcher, build_search_chain
from toolwire.workspace import Workspace

GROUPS = ("memory", "code", "web", "net", "fs", "runtime")
"""The built-in groups, each of which can be turned off."""


class BuiltinSettings(BaseModel):
    """Where the built-ins keep their state and what they may reach."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Path(".toolwire")
    workspace: Path | None = None
    """The folder the file and exec tools are confined to; `<data_dir>/workspace` if unset."""
    disabled: frozenset[str] = frozenset()
    web_allow_hosts: str = ""
    """Hosts, IPs or networks the web tools may reach although they are private."""
    web_allow_private: bool = False
    searxng_url: str | None = None
    brave_api_key: str | None = None
    max_output_bytes: int = Field(default=16 * 1024, gt=0)

    @property
    def workspace_root(self) -> Path:
        return self.workspace or self.data_dir / "workspace"

    def enabled(self, group: str) -> bool:
        return group not in self.disabled


def unknown_groups(names: frozenset[str]) -> list[str]:
    return sorted(names - set(GROUPS))


@dataclass
class Builtins:
    """The built-in tools and the resources they hold until `close()`."""

    tools: list[Tool]
    code_runner: CodeRunner | None = None
    _closers: list[Callable[[], object]] = field(default_factory=list)

    def close(self) -> None:
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                closer()


def builtin_tools(settings: BuiltinSettings, *, code_runner: CodeRunner | None = None) -> Builtins:
    """Every enabled group, over its embedded default. Without `code_runner`,
    `execute_code` is defined but refuses to run."""
    built = Builtins(tools=[], code_runner=code_runner)
    for group in GROUPS:
        if settings.enabled(group):
            built.tools.extend(_GROUP_BUILDERS[group](settings, built))
    return built


def _memory(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    manager = SqliteMemoryManager(settings.data_dir / DEFAULT_FILENAME)
    built._closers.append(manager.close)
    yield from memory_tools(manager)


def _code(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    yield from code_tools(built.code_runner)


def _policy(settings: BuiltinSettings) -> AddressPolicy:

    return AddressPolicy.from_setting(
        settings.web_allow_hosts,
        allow_private=settings.web_allow_private,
        hint="--allow-host (env TOOLWIRE_WEB_ALLOW_HOSTS)",
    )


def _web(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    search = build_search_chain(
        searxng_url=settings.searxng_url, brave_api_key=settings.brave_api_key
    )
    yield from web_tools(search, HttpFetcher(_policy(settings)))


def _net(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    yield from http_tools(_policy(settings))


def _fs(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    limit = min(DEFAULT_MAX_READ_BYTES, settings.max_output_bytes - 512)
    yield from file_tools(Workspace(settings.workspace_root), max_read_bytes=limit)


def _runtime(settings: BuiltinSettings, built: Builtins) -> Iterator[Tool]:
    yield from exec_tools(Workspace(settings.workspace_root))


_GROUP_BUILDERS: dict[str, Callable[[BuiltinSettings, Builtins], Iterator[Tool]]] = {
    "memory": _memory,
    "code": _code,
    "web": _web,
    "net": _net,
    "fs": _fs,
    "runtime": _runtime,
}
