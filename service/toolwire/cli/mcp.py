"""`toolwire mcp`: the registry's tools for MCP clients, over stdio or streamable HTTP.

In process (the default) it runs the registry `toolwire serve` runs, with the
same flags (built-ins, --config, --tools, code mode, both listeners), and
serves MCP beside it; with --target it serves a running toolwire server's
tools as its client instead (--token or TOOLWIRE_TOKEN, TLS flags).

    toolwire mcp [--transport stdio|http] [--mcp-host H --mcp-port P] [serve flags]
    toolwire mcp --target host:port [--token T] [--transport ...]

Who MCP calls act as: remotely, the token's principal. In process, the
principal "mcp" with every scope, under the configuration's policy named
"mcp" if there is one, else its default policy; `--principal NAME` acts as
the configured token principal NAME instead (its scopes and policy). Calls
carry the context caller_id "mcp" and `--user-id` (memory tools need one).

Over stdio, stdout carries only the MCP protocol: the process's file
descriptors 0 and 1 are taken for the session before anything starts, and
everything else (logs, child processes) writes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from toolwire_client.aio import AsyncToolwireClient

from toolwire.auth import ALL_SCOPES, Principal
from toolwire.mcp.server import LocalRegistry, McpFront, RemoteRegistry, serve_http, serve_stdio
from toolwire.models import CallContext
from toolwire.policy.config import ToolwireConfig
from toolwire.server import ToolwireServers, is_loopback

from . import remote, serve

log = logging.getLogger("toolwire.mcp")

MCP_PRINCIPAL = "mcp"


def add_commands(commands: Any) -> None:
    env = os.environ.get
    cmd: argparse.ArgumentParser = commands.add_parser(
        "mcp",
        help="serve the tools to MCP clients (stdio or streamable HTTP), "
        "in process or from a running server (--target)",
    )
    cmd.set_defaults(run=run)
    front = cmd.add_argument_group("MCP")
    front.add_argument(
        "--transport", choices=("stdio", "http"), default=env("TOOLWIRE_MCP_TRANSPORT", "stdio"),
        help="stdio: one session on stdin/stdout (desktop and IDE clients); "
        "http: streamable HTTP at http://MCP_HOST:MCP_PORT/mcp",
    )  # fmt: skip
    front.add_argument("--mcp-host", default=env("TOOLWIRE_MCP_HOST", "127.0.0.1"))
    front.add_argument(
        "--mcp-port", type=int, default=int(env("TOOLWIRE_MCP_PORT", "8765")),
        help="the streamable HTTP port (0: any free port; the URL is logged to stderr)",
    )  # fmt: skip
    front.add_argument(
        "--principal", default=None, metavar="NAME",
        help="in process: act as the configured token principal NAME "
        f"(default: '{MCP_PRINCIPAL}' with every scope, policy '{MCP_PRINCIPAL}' or the default)",
    )  # fmt: skip
    front.add_argument(
        "--user-id", default=env("TOOLWIRE_USER_ID", ""),
        help="the end user calls act for (env TOOLWIRE_USER_ID); memory tools need one",
    )  # fmt: skip
    remote.add_connection_flags(cmd)
    # Only an explicit --target means remote: without one, the registry runs here.
    cmd.set_defaults(target=None)
    serve.add_server_arguments(cmd)


def run(args: argparse.Namespace) -> int:
    if args.transport == "http" and not is_loopback(args.mcp_host):
        # The MCP listener has no authentication of its own: every client
        # acts as the MCP principal, so it must not be reachable from elsewhere.
        print(
            f"toolwire: the MCP listener serves every client as principal "
            f"'{MCP_PRINCIPAL}' without authentication, so it listens on loopback only, "
            f"not on {args.mcp_host}; put an authenticating proxy in front to serve others",
            file=sys.stderr,
        )
        return 2
    wire = _claim_stdio() if args.transport == "stdio" else None
    context = CallContext(caller_id=MCP_PRINCIPAL, user_id=args.user_id)
    if args.target is not None:
        return _run_remote(args, context, wire)
    return _run_in_process(args, context, wire)


@dataclass(frozen=True, slots=True)
class _Wire:
    """The MCP client's stdin and stdout, moved off fds 0 and 1."""

    stdin_fd: int
    stdout_fd: int

    def files(self) -> tuple[Any, Any]:
        stdin = io.TextIOWrapper(
            os.fdopen(self.stdin_fd, "rb", closefd=False), encoding="utf-8", errors="replace"
        )
        stdout = io.TextIOWrapper(
            os.fdopen(self.stdout_fd, "wb", closefd=False), encoding="utf-8", newline="\n"
        )
        return anyio.wrap_file(stdin), anyio.wrap_file(stdout)


def _claim_stdio() -> _Wire:
    """Keep the MCP session's pipes on private descriptors; fd 0 becomes the
    null device and fd 1 a copy of stderr, so nothing else (a print, a log
    handler, a child process) can write into the protocol."""
    sys.stdout.flush()
    wire = _Wire(os.dup(0), os.dup(1))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire


def _principal(args: argparse.Namespace, config: ToolwireConfig) -> Principal | None:
    if args.principal is None:
        return Principal(MCP_PRINCIPAL, ALL_SCOPES)
    for token in config.auth.tokens:
        if token.principal == args.principal:
            return Principal(token.principal, frozenset(token.scopes), token.policy)
    return None


def _run_in_process(args: argparse.Namespace, context: CallContext, wire: _Wire | None) -> int:
    failed: list[str] = []

    async def until(servers: ToolwireServers, config: ToolwireConfig) -> None:
        principal = _principal(args, config)
        if principal is None:
            failed.append(f"no token principal named '{args.principal}' in the configuration")
            return
        front = McpFront(LocalRegistry(servers.registry, principal, context))
        try:
            await _serve_front(front, args, wire)
        except OSError as e:
            failed.append(f"the MCP listener: {e}")

    code = serve.run(args, until=until)
    for message in failed:
        print(f"toolwire: {message}", file=sys.stderr)
    return 2 if failed and code == 0 else code


async def _serve_front(front: McpFront, args: argparse.Namespace, wire: _Wire | None) -> None:
    if wire is not None:
        stdin, stdout = wire.files()
        await serve_stdio(front, stdin, stdout)
        return

    def bound(url: str) -> None:
        print(f"toolwire: MCP over streamable HTTP at {url}", file=sys.stderr, flush=True)

    await serve_http(front, args.mcp_host, args.mcp_port, on_bound=bound)


def _run_remote(args: argparse.Namespace, context: CallContext, wire: _Wire | None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        root = args.tls_ca.read_bytes() if args.tls_ca is not None else None
    except OSError as e:
        print(f"toolwire: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
        return 2

    async def main() -> None:
        async with AsyncToolwireClient(
            args.target,
            token=args.token,
            tls=args.tls,
            root_certificates=root,
            server_name_override=args.tls_server_name,
        ) as client:
            front = McpFront(RemoteRegistry(client, context))
            await _serve_front(front, args, wire)

    try:
        asyncio.run(_until_signal(main))
    except OSError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2
    return 0


async def _until_signal(main: Callable[[], Awaitable[None]]) -> None:
    """`main` until it returns or SIGINT/SIGTERM cancels it."""
    task = asyncio.ensure_future(main())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
