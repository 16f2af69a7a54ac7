"""`toolwire config`: write, check and explain the security configuration.

`check` reads a file the way `toolwire serve --config` does (tokens resolved
from the environment too) and summarises what it grants, so a mistake shows up
before the server is restarted; `schema` is the JSON Schema for editors;
`hash-token` turns a token into the digest `token_sha256` wants; `example`
prints a commented file to start from.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from toolwire.auth import Scope, digest
from toolwire.policy.commands import validate_pattern
from toolwire.policy.config import (
    TOKENS_ENV,
    ConfigError,
    ToolwireConfig,
    json_schema,
    load_config,
    token_entries,
    tokens_from_env,
)
from toolwire.policy.rules import ExecMode, ToolPolicy

MIN_TOKEN_CHARS = 16
EXAMPLE = "example.toml"
_RULE_LISTS = (
    "allow",
    "allow_groups",
    "allow_tiers",
    "deny",
    "deny_groups",
    "deny_tiers",
    "require_approval",
)


def add_commands(commands: Any) -> None:
    config: argparse.ArgumentParser = commands.add_parser(
        "config", help="check the security configuration, print its schema or an example"
    )
    actions = config.add_subparsers(dest="action", required=True)

    check = actions.add_parser(
        "check", help="validate a configuration file and summarise what it grants"
    )
    check.add_argument("file", type=Path, metavar="FILE")
    check.add_argument(
        "--no-env", action="store_true",
        help=f"check the file alone: do not read token variables or {TOKENS_ENV}",
    )  # fmt: skip
    check.set_defaults(run=_check)

    schema = actions.add_parser("schema", help="print the configuration's JSON Schema")
    schema.set_defaults(run=_schema)

    hash_token = actions.add_parser(
        "hash-token", help="read a token from stdin and print its SHA-256 for token_sha256"
    )
    hash_token.set_defaults(run=_hash_token)

    example = actions.add_parser("example", help="print a commented example configuration")
    example.set_defaults(run=_example)


def example_text() -> str:
    return resources.files("toolwire.policy").joinpath(EXAMPLE).read_text(encoding="utf-8")


def _check(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ConfigError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2
    principals = _file_principals(config)
    if not args.no_env:
        try:
            token_entries(config)  # every token variable set, TOOLWIRE_TOKENS well formed
        except ConfigError as e:
            print(f"toolwire: {e}", file=sys.stderr)
            print(
                "toolwire: `toolwire serve` would refuse to start; "
                "`check --no-env` checks the file alone",
                file=sys.stderr,
            )
            return 2
        principals += _env_principals(os.environ)
    for warning in _pattern_warnings(config):
        print(f"toolwire: warning: {warning}", file=sys.stderr)
    print(f"{args.file}: valid")
    print("\n".join(summary(config, principals, env_checked=not args.no_env)))
    return 0


Principal = tuple[str, tuple[Scope, ...], str, str]
"""name, scopes, the policy named for it ("" for none), where its token comes from."""


def _file_principals(config: ToolwireConfig) -> list[Principal]:
    return [
        (
            t.principal,
            t.scopes,
            t.policy,
            f"${t.token_env}" if t.token_env is not None else "token_sha256",
        )
        for t in config.auth.tokens
    ]


def _env_principals(environ: Mapping[str, str]) -> list[Principal]:
    return [
        (name, scopes, "", TOKENS_ENV)
        for name, scopes, _ in tokens_from_env(environ.get(TOKENS_ENV, ""))
    ]


def _policy_of(config: ToolwireConfig, name: str, policy: str) -> str:
    """The policy that applies, as the policy engine chooses it."""
    return policy or (name if name in config.policies else "default")


def summary(
    config: ToolwireConfig, principals: list[Principal], *, env_checked: bool = True
) -> list[str]:
    lines = []
    if principals:
        lines.append(f"principals ({len(principals)}):")
        width = max(len(p[0]) for p in principals)
        for name, scopes, named, source in principals:
            applied = _policy_of(config, name, named)
            lines.append(
                f"  {name:<{width}}  scopes {'+'.join(scopes):<18} policy {applied:<12} "
                f"token from {source}"
            )
    elif env_checked:
        lines.append(
            "principals: none (no tokens here or in "
            f"{TOKENS_ENV}: a loopback-only development server)"
        )
    else:
        lines.append(f"principals: none in the file ({TOKENS_ENV} not read)")
    lines.append(f"policies ({len(config.policies)}):")
    for name, rules in sorted(config.policies.items()):
        lines.append(f"  {name}: {_describe_policy(rules)}")
    if config.sandbox:
        lines.append("sandbox overrides:")
        for tool, override in sorted(config.sandbox.items()):
            settings = ", ".join(
                f"{k}={json.dumps(v)}" for k, v in override.model_dump(exclude_none=True).items()
            )
            lines.append(f"  {tool}: {settings or '(none)'}")
    else:
        lines.append("sandbox overrides: none")
    limits = config.limits
    per_principal = limits.max_concurrent_per_principal
    per_tool = ", ".join(f"{k} {v}" for k, v in sorted(limits.tool_concurrency.items()))
    lines.append(
        "limits: "
        + (
            f"{per_principal} concurrent calls per principal"
            if per_principal is not None
            else "no per-principal limit"
        )
        + f"; per tool: {per_tool or 'the tools own'}"
    )
    lines.append(f"approvals: tickets expire after {config.approvals.ttl_seconds:g} s")
    audit = config.audit
    lines.append(f"audit: on, arguments {audit.arguments.value}" if audit.enabled else "audit: off")
    return lines


def _describe_policy(policy: ToolPolicy) -> str:
    exec_ = policy.exec
    if exec_.mode is ExecMode.ALLOWLIST:
        exec_text = (
            f"exec allowlist (on_miss {exec_.on_miss.value}, "
            f"{len(exec_.allowlist)} pattern(s) here)"
        )
    else:
        exec_text = f"exec {exec_.mode.value}"
    parts = []
    for field in _RULE_LISTS:
        values: tuple[str, ...] = getattr(policy, field)
        if values:
            parts.append(f"{field} {', '.join(str(v) for v in values)}")
    if not (policy.allow or policy.allow_groups or policy.allow_tiers):
        parts.insert(0, "allow every tool")
    if not policy.approve_privileged:
        parts.append("privileged tools run without approval")
    return "; ".join([*parts, exec_text])


def _pattern_warnings(config: ToolwireConfig) -> list[str]:
    warnings = []
    for name, policy in sorted(config.policies.items()):
        for i, pattern in enumerate(policy.exec.allowlist):
            problem = validate_pattern(pattern)
            if problem is not None:
                warnings.append(f"policies.{name}.exec.allowlist[{i}]: {problem}")
    return warnings


def _schema(args: argparse.Namespace) -> int:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **json_schema()}
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return 0


def _hash_token(args: argparse.Namespace) -> int:
    if sys.stdin.isatty():
        token = getpass.getpass("token: ", stream=sys.stderr)
    else:
        token = sys.stdin.read()
    token = token.strip()
    if not token:
        print("toolwire: no token on stdin", file=sys.stderr)
        return 2
    if len(token) < MIN_TOKEN_CHARS:
        print(
            f"toolwire: a token must have at least {MIN_TOKEN_CHARS} characters "
            f"(this one has {len(token)}); make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
            file=sys.stderr,
        )
        return 2
    print(digest(token).hex())
    return 0


def _example(args: argparse.Namespace) -> int:
    try:
        text = example_text()
    except OSError as e:
        print(f"toolwire: the example is missing from this installation: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
