"""`toolwire`: run the registry, or talk to a running one.

toolwire serve [--port 50051] [--tools pkg.module ...]
toolwire list | call NAME --args JSON | stubs | model-tools --format F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence

from .errors import ToolwireError
from .models import ModelFormat, SafetyTier
from .registry import ToolRegistry
from .server import ServerConfig

DEFAULT_TARGET = "127.0.0.1:50051"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolwire", description="A tool registry for LLM agents.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the registry server")
    serve.add_argument("--host", default=os.environ.get("TOOLWIRE_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("TOOLWIRE_PORT", "50051")))
    serve.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE and register its @tool functions (repeatable)",
    )
    serve.add_argument("--max-message-bytes", type=int, default=4 * 1024 * 1024)
    serve.add_argument("--default-timeout", type=float, default=30.0, metavar="SECONDS")
    serve.add_argument("--max-output-bytes", type=int, default=16 * 1024)
    serve.add_argument("--grace", type=float, default=5.0, metavar="SECONDS")

    def client_command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument(
            "--target",
            default=os.environ.get("TOOLWIRE_TARGET", DEFAULT_TARGET),
            help="host:port of the server (env TOOLWIRE_TARGET)",
        )
        return sub

    listing = client_command("list", "list the registered tools")
    listing.add_argument("--group", default="")
    listing.add_argument("--tier", choices=[t.value for t in SafetyTier])
    listing.add_argument("--prefix", default="")
    listing.add_argument("--json", action="store_true", help="print the definitions as JSON")

    call = client_command("call", "dispatch one tool call")
    call.add_argument("name")
    call.add_argument("--args", default="{}", help="the arguments as a JSON object")
    call.add_argument("--user-id", default="")
    call.add_argument("--session-id", default="")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    stubs = client_command("stubs", "print TypeScript stubs for the tools")
    stubs.add_argument("names", nargs="*")

    model_tools = client_command("model-tools", "print the tools in a model API's format")
    model_tools.add_argument("--format", required=True, choices=[f.value for f in ModelFormat])
    model_tools.add_argument("names", nargs="*")
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .loading import load_tool_module
    from .server import serve

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    registry = ToolRegistry(
        default_timeout=args.default_timeout, max_output_bytes=args.max_output_bytes
    )
    for module in args.tools:
        try:
            load_tool_module(registry, module)
        except (ImportError, ToolwireError) as e:
            print(f"toolwire: cannot load tools from '{module}': {e}", file=sys.stderr)
            return 2
    config = ServerConfig(
        host=args.host,
        port=args.port,
        max_message_bytes=args.max_message_bytes,
        grace_seconds=args.grace,
        tool_modules=args.tools,
    )
    try:
        asyncio.run(serve(registry, config))
    except OSError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2
    return 0


def _client_command(args: argparse.Namespace) -> int:
    from toolwire_client import ToolwireClient
    from toolwire_client.errors import ToolwireRpcError

    from .models import CallContext

    try:
        with ToolwireClient(args.target) as client:
            if args.command == "list":
                tier = SafetyTier(args.tier) if args.tier else None
                tools = client.list(group=args.group, tier=tier, name_prefix=args.prefix)
                if args.json:
                    print(json.dumps([t.model_dump(mode="json") for t in tools], indent=2))
                for t in [] if args.json else tools:
                    summary = t.description.strip().splitlines()[0] if t.description else ""
                    print(f"{t.name:<24} {t.safety_tier.value:<15} {t.group or '-':<12} {summary}")
                return 0
            if args.command == "call":
                context = CallContext(
                    caller_id="cli", user_id=args.user_id, session_id=args.session_id
                )
                result = client.dispatch(args.name, args.args, context=context)
                if args.json:
                    print(result.model_dump_json(indent=2))
                elif result.success:
                    print(result.output)
                else:
                    print(f"error ({result.error_code}): {result.error}", file=sys.stderr)
                return 0 if result.success else 1
            if args.command == "stubs":
                sys.stdout.write(client.generate_stubs(args.names))
                return 0
            converted = client.to_model_tools(ModelFormat(args.format), args.names)
            print(json.dumps(converted.tools, indent=2, ensure_ascii=False))
            for d in converted.diagnostics:
                print(f"note: {d.tool_name}{d.path}: {d.message}", file=sys.stderr)
            return 0
    except (ToolwireRpcError, ToolwireError) as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return _client_command(args)


if __name__ == "__main__":
    sys.exit(main())
