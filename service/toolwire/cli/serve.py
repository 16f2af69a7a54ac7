"""`toolwire serve`: the registry with the built-in tools on embedded defaults."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from toolwire.approvals import ApprovalBook
from toolwire.audit import DEFAULT_FILENAME as AUDIT_FILE
from toolwire.audit import SqliteAuditLog
from toolwire.auth import Authenticator, TokenEntry
from toolwire.builtin import GROUPS, BuiltinSettings, builtin_tools, unknown_groups
from toolwire.capabilities import Capabilities
from toolwire.codemode import CodeMode
from toolwire.errors import ToolwireError
from toolwire.limits import ConcurrencyLimits
from toolwire.loading import load_tool_module
from toolwire.policy.allowlist import DEFAULT_FILENAME as ALLOWLIST_FILE
from toolwire.policy.allowlist import ExecAllowlist
from toolwire.policy.config import ConfigError, ToolwireConfig, load_config, token_entries
from toolwire.policy.engine import PolicyEngine
from toolwire.registry import ToolRegistry
from toolwire.sandbox import DenoRuntime, Limits
from toolwire.server import ServerConfig, ToolwireServers, serve

log = logging.getLogger("toolwire")


def _env_list(name: str) -> list[str]:
    return [v for v in os.environ.get(name, "").replace(",", " ").split() if v]


def add_commands(commands: Any) -> None:
    serve_cmd: argparse.ArgumentParser = commands.add_parser(
        "serve", help="run the registry server with the built-in tools"
    )
    serve_cmd.set_defaults(run=run)
    add_server_arguments(serve_cmd)


def add_server_arguments(serve_cmd: argparse.ArgumentParser) -> None:
    """The flags of `toolwire serve` (also those of `toolwire mcp` in process)."""
    env = os.environ.get
    serve_cmd.add_argument("--host", default=env("TOOLWIRE_HOST", "127.0.0.1"))
    serve_cmd.add_argument("--port", type=int, default=int(env("TOOLWIRE_PORT", "50051")))
    serve_cmd.add_argument(
        "--http-host", default=env("TOOLWIRE_HTTP_HOST"),
        help="the gRPC-web/Connect listener's address (default: the same as --host)",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--http-port", type=int, default=int(env("TOOLWIRE_HTTP_PORT", "50052")),
        help="the gRPC-web/Connect listener's port, for code runs (0: any free port)",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--cors-origin", action="append", default=_env_list("TOOLWIRE_CORS_ORIGINS"),
        metavar="ORIGIN",
        help="let browser code from ORIGIN call the HTTP listener ('*': any); repeatable "
        "(env TOOLWIRE_CORS_ORIGINS); CORS is off without one",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--tools", action="append", default=[], metavar="MODULE",
        help="import MODULE and register its @tool functions (repeatable)",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--config", type=Path, default=env("TOOLWIRE_CONFIG"),
        help="the security configuration (TOML): tokens, policies, exec approvals, sandbox, "
        "limits, audit (env TOOLWIRE_CONFIG); without one: a loopback-only development server",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--tls-cert", type=Path, default=env("TOOLWIRE_TLS_CERT"),
        help="PEM certificate chain: the gRPC listener serves TLS only (env TOOLWIRE_TLS_CERT)",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--tls-key", type=Path, default=env("TOOLWIRE_TLS_KEY"),
        help="the certificate's PEM private key (env TOOLWIRE_TLS_KEY)",
    )  # fmt: skip
    serve_cmd.add_argument(
        "--tls-client-ca", type=Path, default=env("TOOLWIRE_TLS_CLIENT_CA"),
        help="require client certificates issued by these PEM roots (mutual TLS)",
    )  # fmt: skip
    serve_cmd.add_argument("--max-message-bytes", type=int, default=4 * 1024 * 1024)
    serve_cmd.add_argument("--default-timeout", type=float, default=30.0, metavar="SECONDS")
    serve_cmd.add_argument("--max-output-bytes", type=int, default=16 * 1024)
    serve_cmd.add_argument("--grace", type=float, default=5.0, metavar="SECONDS")

    builtins = serve_cmd.add_argument_group("built-in tools")
    builtins.add_argument(
        "--data-dir", type=Path, default=Path(env("TOOLWIRE_DATA_DIR", ".toolwire")),
        help="where memory and the default workspace live (env TOOLWIRE_DATA_DIR)",
    )  # fmt: skip
    builtins.add_argument(
        "--workspace", type=Path, default=env("TOOLWIRE_WORKSPACE"),
        help="the folder file and exec tools are confined to (default: DATA_DIR/workspace)",
    )  # fmt: skip
    builtins.add_argument(
        "--disable", action="append", default=_env_list("TOOLWIRE_DISABLE"), metavar="GROUP",
        help=f"leave a built-in group out: {', '.join(GROUPS)} (env TOOLWIRE_DISABLE)",
    )  # fmt: skip
    builtins.add_argument("--no-builtins", action="store_true", help="no built-in tools at all")
    builtins.add_argument(
        "--code-timeout", type=float, default=float(env("TOOLWIRE_CODE_TIMEOUT", "30")),
        metavar="SECONDS", help="wall-clock limit of one execute_code run",
    )  # fmt: skip
    builtins.add_argument(
        "--code-call-budget", type=int, default=int(env("TOOLWIRE_CODE_CALL_BUDGET", "50")),
        metavar="N", help="how many tool calls one execute_code run may make",
    )  # fmt: skip
    builtins.add_argument(
        "--allow-host", action="append", default=_env_list("TOOLWIRE_WEB_ALLOW_HOSTS"),
        metavar="HOST",
        help="let web tools reach this private host, IP or network (env TOOLWIRE_WEB_ALLOW_HOSTS)",
    )  # fmt: skip
    builtins.add_argument(
        "--allow-private-hosts", action="store_true",
        default=env("TOOLWIRE_WEB_ALLOW_PRIVATE") == "1",
        help="let web tools reach any private address (local use only)",
    )  # fmt: skip
    builtins.add_argument(
        "--searxng-url", default=env("TOOLWIRE_SEARXNG_URL"),
        help="a SearXNG instance for web_search (env TOOLWIRE_SEARXNG_URL); "
        "a Brave Search key is read from TOOLWIRE_BRAVE_API_KEY",
    )  # fmt: skip


def builtin_settings(args: argparse.Namespace) -> BuiltinSettings:
    disabled = frozenset(GROUPS) if args.no_builtins else frozenset(args.disable)
    return BuiltinSettings(
        data_dir=args.data_dir,
        workspace=args.workspace,
        disabled=disabled,
        web_allow_hosts=",".join(args.allow_host),
        web_allow_private=args.allow_private_hosts,
        searxng_url=args.searxng_url,
        brave_api_key=os.environ.get("TOOLWIRE_BRAVE_API_KEY"),
        max_output_bytes=args.max_output_bytes,
    )


class _Late:
    """A value known only once the servers have bound their ports."""

    def __init__(self, missing: str) -> None:
        self._value: str | None = None
        self._missing = missing

    def set(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        if self._value is None:
            raise RuntimeError(self._missing)
        return self._value


def load_security(args: argparse.Namespace) -> ToolwireConfig:
    """The configuration file's settings, or the defaults without one."""
    return ToolwireConfig() if args.config is None else load_config(args.config)


Companion = Callable[[ToolwireServers, ToolwireConfig], Awaitable[None]]
"""Work that runs beside the listeners once they are up (an MCP front, MCP
imports), over the same registry (`servers.registry`)."""


def run(
    args: argparse.Namespace,
    *,
    alongside: Sequence[Companion] = (),
    until: Companion | None = None,
) -> int:
    """`toolwire serve`; `alongside` run as tasks while it serves (cancelled at
    shutdown); when `until` returns, the server shuts down as on SIGTERM."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    unknown = unknown_groups(frozenset(args.disable))
    if unknown:
        print(
            f"toolwire: unknown built-in group(s) {', '.join(unknown)}; "
            f"the groups are {', '.join(GROUPS)}",
            file=sys.stderr,
        )
        return 2
    try:
        security = load_security(args)
        tokens = token_entries(security)
    except ConfigError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2
    if security.mcp.servers:  # the configured MCP imports run beside the listeners
        from toolwire.mcp.importer import import_configured

        alongside = (*alongside, import_configured)
    with Security(security, args.data_dir) as wired:
        return _serve(args, security, tokens, wired, alongside, until)


class Security:
    """The policy engine, limits and audit log of a server, and their files."""

    def __init__(self, config: ToolwireConfig, data_dir: Path) -> None:
        self.approvals = ApprovalBook(ttl_seconds=config.approvals.ttl_seconds)
        self.allowlist = ExecAllowlist(data_dir / ALLOWLIST_FILE)
        self.engine = PolicyEngine(config, approvals=self.approvals, allowlist=self.allowlist)
        self.limits = ConcurrencyLimits(
            per_principal=config.limits.max_concurrent_per_principal,
            per_tool=config.limits.tool_concurrency,
        )
        self.audit = SqliteAuditLog(data_dir / AUDIT_FILE) if config.audit.enabled else None

    def __enter__(self) -> Security:
        return self

    def __exit__(self, *exc: object) -> None:
        self.approvals.close()
        self.allowlist.close()
        if self.audit is not None:
            self.audit.close()


def _serve(
    args: argparse.Namespace,
    security: ToolwireConfig,
    tokens: tuple[TokenEntry, ...],
    wired: Security,
    alongside: Sequence[Companion],
    until: Companion | None,
) -> int:
    registry = ToolRegistry(
        default_timeout=args.default_timeout,
        max_output_bytes=args.max_output_bytes,
        policy=wired.engine,
        limits=wired.limits,
        audit=wired.audit,
        audit_arguments=security.audit.arguments,
    )
    capabilities = Capabilities()
    authenticator = Authenticator(tokens, capabilities=capabilities) if tokens else None
    http_url = _Late("the HTTP listener has not started")
    sandbox = DenoRuntime(limits=Limits(timeout_seconds=args.code_timeout), pool_size=2)
    code_mode = CodeMode(
        registry, capabilities, sandbox, http_url.get, call_budget=args.code_call_budget
    )
    builtins = builtin_tools(builtin_settings(args), code_runner=code_mode)
    try:
        for t in builtins.tools:
            registry.register(t)
        for module in args.tools:
            try:
                load_tool_module(registry, module)
            except (ImportError, ToolwireError) as e:
                print(f"toolwire: cannot load tools from '{module}': {e}", file=sys.stderr)
                return 2
        for problem in wired.engine.placement_problems(registry.sandboxing_of):
            log.warning("configuration: %s", problem)
        config = ServerConfig(
            host=args.host,
            port=args.port,
            max_message_bytes=args.max_message_bytes,
            grace_seconds=args.grace,
            tool_modules=args.tools,
            http_host=args.http_host,
            http_port=args.http_port,
            cors_origins=tuple(args.cors_origin),
            tls_cert_file=args.tls_cert,
            tls_key_file=args.tls_key,
            tls_client_ca_file=args.tls_client_ca,
        )
        try:
            tasks: list[asyncio.Future[None]] = []

            async def started(servers: ToolwireServers) -> None:
                http_url.set(servers.http_base_url)
                await sandbox.warm(servers.http_base_url)
                tasks.extend(asyncio.ensure_future(c(servers, security)) for c in alongside)

            async def stopped() -> None:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                await sandbox.aclose()

            asyncio.run(
                serve(
                    registry,
                    config,
                    capabilities=capabilities,
                    authenticator=authenticator,
                    on_started=started,
                    on_stopped=stopped,
                    until=None if until is None else (lambda servers: until(servers, security)),
                )
            )
        except (OSError, ToolwireError) as e:
            print(f"toolwire: {e}", file=sys.stderr)
            return 2
        return 0
    finally:
        builtins.close()
