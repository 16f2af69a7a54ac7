"""The server's security configuration: a TOML file with a schema.

Tokens, per-principal policies and the server default, exec approvals,
per-tool sandbox constraints, limits, approvals and audit live in one file
(`toolwire serve --config toolwire.toml`). Every mistake is reported with its
place in the file and what is allowed there, before the server starts; the
JSON Schema (`toolwire config schema`) lets editors check it as it is typed.
Secrets never live in the file: a token is named by the environment variable
that holds it, or by its SHA-256 digest.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolwire.audit import Redaction
from toolwire.auth import Scope, TokenEntry, digest
from toolwire.errors import ToolwireError

from .placement import SandboxOverride
from .rules import ToolPolicy

_STRICT = ConfigDict(frozen=True, extra="forbid")
_PRINCIPAL = r"^[A-Za-z0-9_.@-]{1,64}$"
TOKENS_ENV = "TOOLWIRE_TOKENS"


class ConfigError(ToolwireError):
    """A configuration that cannot be used as it is; the message says where and why."""


class TokenConfig(BaseModel):
    model_config = _STRICT

    principal: str = Field(pattern=_PRINCIPAL)
    scopes: tuple[Scope, ...] = Field(min_length=1)
    policy: str = ""
    """The policy under `policies` that applies; empty: the principal's own, else `default`."""
    token_env: str | None = None
    """The environment variable that holds the token."""
    token_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    """The token's SHA-256 digest in hex (`toolwire config hash-token`)."""

    @model_validator(mode="after")
    def _one_source(self) -> TokenConfig:
        if (self.token_env is None) == (self.token_sha256 is None):
            raise ValueError("give exactly one of token_env and token_sha256")
        return self


class AuthConfig(BaseModel):
    model_config = _STRICT

    tokens: tuple[TokenConfig, ...] = ()


class LimitsConfig(BaseModel):
    model_config = _STRICT

    max_concurrent_per_principal: int | None = Field(default=64, gt=0)
    """Calls one principal may have in flight; more get RESOURCE_EXHAUSTED."""
    tool_concurrency: dict[str, int] = Field(default_factory=dict)
    """Per-tool limits, over the tools' own `max_concurrency`."""

    @model_validator(mode="after")
    def _positive(self) -> LimitsConfig:
        bad = [name for name, n in self.tool_concurrency.items() if n <= 0]
        if bad:
            raise ValueError(f"tool_concurrency must be positive, not for {', '.join(bad)}")
        return self


class ApprovalsConfig(BaseModel):
    model_config = _STRICT

    ttl_seconds: float = Field(default=600.0, gt=0)


class AuditConfig(BaseModel):
    model_config = _STRICT

    enabled: bool = True
    arguments: Redaction = Redaction.REDACT
    """redact: keys and types only; full: as sent, secrets masked; none: not stored."""


class McpServerConfig(BaseModel):
    """One MCP server whose tools are imported (`[[mcp.servers]]`): started as a
    stdio subprocess (`command`) or reached over streamable HTTP (`url`)."""

    model_config = _STRICT

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    """The namespace prefix: its tools are registered as `NAME__TOOL`, in group NAME."""
    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    """The program and its arguments (stdio transport)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the command."""
    cwd: str | None = None
    """The command's working folder."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    """A streamable HTTP endpoint."""
    timeout_seconds: float = Field(default=30.0, gt=0)
    """Each imported tool's timeout, and the bound of every request to the server."""
    restart_initial_seconds: float = Field(default=1.0, gt=0)
    """The wait before the first restart of a server that died or could not start."""
    restart_max_seconds: float = Field(default=60.0, gt=0)
    """The cap of the wait between restarts."""
    restart_multiplier: float = Field(default=2.0, ge=1.0)
    """How much the wait grows after each failed start."""
    ping_interval_seconds: float = Field(default=5.0, gt=0)
    """How often a running server is pinged to notice that it is gone."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command and url")
        if self.url is not None and (self.env or self.cwd is not None):
            raise ValueError("env and cwd apply to a command, not to a url")
        if self.restart_max_seconds < self.restart_initial_seconds:
            raise ValueError("restart_max_seconds cannot be below restart_initial_seconds")
        return self


class McpConfig(BaseModel):
    model_config = _STRICT

    servers: tuple[McpServerConfig, ...] = ()

    @model_validator(mode="after")
    def _distinct_names(self) -> McpConfig:
        seen: set[str] = set()
        for server in self.servers:
            if server.name in seen:
                raise ValueError(f"two MCP servers are named '{server.name}'; names are prefixes")
            seen.add(server.name)
        return self


def _default_policies() -> dict[str, ToolPolicy]:
    return {"default": ToolPolicy()}


class ToolwireConfig(BaseModel):
    model_config = _STRICT

    auth: AuthConfig = Field(default_factory=AuthConfig)
    policies: dict[str, ToolPolicy] = Field(default_factory=_default_policies)
    sandbox: dict[str, SandboxOverride] = Field(default_factory=dict)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)

    @model_validator(mode="before")
    @classmethod
    def _with_default_policy(cls, data: Any) -> Any:
        """A file that names only some principals' policies keeps the default one."""
        if isinstance(data, dict) and isinstance(data.get("policies"), dict):
            data = {**data, "policies": {"default": {}, **data["policies"]}}
        return data

    @model_validator(mode="after")
    def _policies_exist(self) -> ToolwireConfig:
        for i, token in enumerate(self.auth.tokens):
            if token.policy and token.policy not in self.policies:
                raise ValueError(
                    f"auth.tokens[{i}].policy names '{token.policy}', which is not under "
                    f"policies (there are {', '.join(sorted(self.policies))})"
                )
        return self


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def describe(error: ValidationError, source: str) -> str:
    lines = [f"{source}: {error.error_count()} problem(s)"]
    for item in error.errors():
        loc = tuple(p for p in item["loc"] if not str(p).startswith("function-after"))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "not a known setting (see `toolwire config schema`)"
        # A whole-file check (a token's policy) names its own place in the message.
        lines.append(f"  {_location(loc)}: {message}" if loc else f"  {message}")
    return "\n".join(lines)


def parse_config(data: Mapping[str, Any], source: str = "configuration") -> ToolwireConfig:
    try:
        return ToolwireConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe(e, source)) from None


def load_config(path: Path) -> ToolwireConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the configuration {path}: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    return parse_config(data, str(path))


def json_schema() -> dict[str, Any]:
    return ToolwireConfig.model_json_schema()


_ENV_TOKEN = re.compile(r"^(?P<principal>[A-Za-z0-9_.@-]{1,64})=(?P<scopes>[a-z+]+):(?P<token>.+)$")


def tokens_from_env(value: str) -> list[tuple[str, tuple[Scope, ...], str]]:
    """`TOOLWIRE_TOKENS`: comma-separated `principal=scope+scope:token` entries."""
    entries = []
    for i, raw in enumerate(part.strip() for part in value.split(",")):
        if not raw:
            continue
        match = _ENV_TOKEN.match(raw)
        if match is None:
            raise ConfigError(
                f"{TOKENS_ENV} entry {i + 1} is not 'principal=scope+scope:token' "
                "(scopes: dispatch, register, admin)"
            )
        try:
            scopes = tuple(Scope(s) for s in match["scopes"].split("+"))
        except ValueError:
            raise ConfigError(
                f"{TOKENS_ENV} entry {i + 1} ('{match['principal']}') names an unknown scope in "
                f"'{match['scopes']}'; the scopes are dispatch, register, admin"
            ) from None
        entries.append((match["principal"], scopes, match["token"]))
    return entries


def token_entries(
    config: ToolwireConfig, environ: Mapping[str, str] = os.environ
) -> tuple[TokenEntry, ...]:
    """The tokens of the configuration and of `TOOLWIRE_TOKENS`, as digests.

    Raises ConfigError for a token variable that is unset or empty: a server
    must not start believing it is protected by a token that does not exist."""
    entries: list[TokenEntry] = []
    for i, token in enumerate(config.auth.tokens):
        if token.token_env is not None:
            secret = environ.get(token.token_env, "")
            if not secret.strip():
                raise ConfigError(
                    f"auth.tokens[{i}] ('{token.principal}') reads its token from "
                    f"${token.token_env}, which is unset or empty"
                )
            sha = digest(secret.strip())
        else:
            assert token.token_sha256 is not None
            sha = bytes.fromhex(token.token_sha256)
        entries.append(TokenEntry(token.principal, sha, frozenset(token.scopes), token.policy))
    for principal, scopes, secret in tokens_from_env(environ.get(TOKENS_ENV, "")):
        entries.append(TokenEntry(principal, digest(secret), frozenset(scopes)))
    return tuple(entries)
