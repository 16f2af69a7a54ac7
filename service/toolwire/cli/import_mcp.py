"""`toolwire import-mcp`: an MCP server's tools served to a running toolwire.

    toolwire import-mcp --target HOST:PORT --name github -- CMD ARGS...
    toolwire import-mcp --target HOST:PORT --name docs --url https://host/mcp

A bridge: an MCP client on one side, a toolwire provider on the other. The
tools appear on the server as `NAME__TOOL` while the bridge runs and go away
when it stops. The MCP server is restarted with backoff when it dies; its
tools stay listed meanwhile and fail with provider_unavailable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

from toolwire.errors import ToolwireError
from toolwire.policy.config import McpServerConfig

from .remote import add_connection_flags

log = logging.getLogger("toolwire")


def add_commands(commands: Any) -> None:
    cmd: argparse.ArgumentParser = commands.add_parser(
        "import-mcp",
        help="serve an MCP server's tools to a running toolwire (a bridge)",
        description="Connects to an MCP server (a command after '--', or --url) and serves "
        "its tools to the toolwire server at --target as NAME__TOOL until stopped.",
    )
    cmd.set_defaults(run=run)
    add_connection_flags(cmd)
    cmd.add_argument("--name", required=True, help="the namespace prefix of the tools")
    cmd.add_argument("--url", help="a streamable HTTP MCP endpoint (instead of a command)")
    cmd.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE",
        help="an environment variable for the command (repeatable)",
    )  # fmt: skip
    cmd.add_argument("--cwd", help="the command's working folder")
    cmd.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS")
    cmd.add_argument("--restart-initial", type=float, default=1.0, metavar="SECONDS")
    cmd.add_argument("--restart-max", type=float, default=60.0, metavar="SECONDS")
    cmd.add_argument("--ping-interval", type=float, default=5.0, metavar="SECONDS")
    cmd.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")


def server_config(args: argparse.Namespace) -> McpServerConfig:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--env takes KEY=VALUE, not {item!r}")
        env[key] = value
    return McpServerConfig(
        name=args.name,
        command=tuple(command) or None,
        url=args.url,
        env=env,
        cwd=args.cwd,
        timeout_seconds=args.timeout,
        restart_initial_seconds=args.restart_initial,
        restart_max_seconds=max(args.restart_max, args.restart_initial),
        ping_interval_seconds=args.ping_interval,
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        server = server_config(args)
    except ValueError as e:
        print(f"toolwire: import-mcp: {e}", file=sys.stderr)
        print("toolwire: give --name and either --url URL or -- CMD ARGS...", file=sys.stderr)
        return 2
    try:
        root = args.tls_ca.read_bytes() if args.tls_ca is not None else None
    except OSError as e:
        print(f"toolwire: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_bridge(args, server, root))
    return 0


async def _bridge(args: argparse.Namespace, server: McpServerConfig, root: bytes | None) -> int:
    from toolwire_client.aio import AsyncToolwireClient

    from toolwire.mcp.importer import McpImporter, ProviderSink

    token = args.token if args.token is not None else os.environ.get("TOOLWIRE_TOKEN")
    async with AsyncToolwireClient(
        args.target,
        token=token,
        tls=args.tls or root is not None or args.tls_server_name is not None,
        root_certificates=root,
        server_name_override=args.tls_server_name,
        timeout=30.0,
    ) as client:
        sink = ProviderSink(client, server.name)
        importer = McpImporter(server, sink)
        supervisor = asyncio.create_task(importer.run(), name="toolwire-mcp-import")
        watcher = asyncio.create_task(_watch_stream(sink), name="toolwire-mcp-stream")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        stopper = asyncio.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait(
                {supervisor, watcher, stopper}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                if task is not stopper and task.exception() is not None:
                    error = task.exception()
                    print(f"toolwire: import-mcp: {error}", file=sys.stderr)
                    return 1
            return 0
        finally:
            for task in (supervisor, watcher, stopper):
                task.cancel()
            await asyncio.gather(supervisor, watcher, stopper, return_exceptions=True)
            with contextlib.suppress(ToolwireError, OSError):
                await sink.close()


async def _watch_stream(sink: Any) -> None:
    """Raises when the server ends a Provide stream the bridge did not close."""
    while True:
        provider = sink.provider
        if provider is None:
            sink.changed.clear()
            await sink.changed.wait()
            continue
        sink.changed.clear()
        closed = asyncio.ensure_future(provider.wait_closed())
        replaced = asyncio.ensure_future(sink.changed.wait())
        try:
            await asyncio.wait({closed, replaced}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            replaced.cancel()
        if closed.done():
            closed.result()  # raises ToolwireRpcError when the stream broke
            if sink.provider is provider:
                raise ToolwireError("the toolwire server ended the Provide stream")
        else:
            closed.cancel()
