"""Commands that talk to a running server through the Python client."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from toolwire_client import ToolwireClient
from toolwire_client.errors import ToolwireRpcError

from toolwire.errors import ToolwireError
from toolwire.models import CallContext, ModelFormat, SafetyTier

DEFAULT_TARGET = "127.0.0.1:50051"

Subparsers = Any  # argparse's _SubParsersAction is private


def add_commands(commands: Subparsers) -> None:
    def client_command(
        name: str, help_text: str, run: Callable[[ToolwireClient, argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(name, help=help_text)
        sub.add_argument(
            "--target",
            default=os.environ.get("TOOLWIRE_TARGET", DEFAULT_TARGET),
            help="host:port of the server (env TOOLWIRE_TARGET)",
        )
        sub.set_defaults(run=lambda args: _with_client(args, run))
        return sub

    listing = client_command("list", "list the registered tools", _list)
    listing.add_argument("--group", default="")
    listing.add_argument("--tier", choices=[t.value for t in SafetyTier])
    listing.add_argument("--prefix", default="")
    listing.add_argument("--json", action="store_true", help="print the definitions as JSON")

    call = client_command("call", "dispatch one tool call", _call)
    call.add_argument("name")
    call.add_argument("--args", default="{}", help="the arguments as a JSON object")
    call.add_argument("--user-id", default="")
    call.add_argument("--session-id", default="")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    stubs = client_command("stubs", "print TypeScript stubs for the tools", _stubs)
    stubs.add_argument("names", nargs="*")

    model_tools = client_command(
        "model-tools", "print the tools in a model API's format", _model_tools
    )
    model_tools.add_argument("--format", required=True, choices=[f.value for f in ModelFormat])
    model_tools.add_argument("names", nargs="*")


def _with_client(
    args: argparse.Namespace, run: Callable[[ToolwireClient, argparse.Namespace], int]
) -> int:
    try:
        with ToolwireClient(args.target) as client:
            return run(client, args)
    except (ToolwireRpcError, ToolwireError) as e:
        print(f"toolwire: {e}", file=sys.stderr)
        return 2


def _list(client: ToolwireClient, args: argparse.Namespace) -> int:
    tier = SafetyTier(args.tier) if args.tier else None
    tools = client.list(group=args.group, tier=tier, name_prefix=args.prefix)
    if args.json:
        print(json.dumps([t.model_dump(mode="json") for t in tools], indent=2))
        return 0
    for t in tools:
        summary = t.description.strip().splitlines()[0] if t.description else ""
        print(f"{t.name:<24} {t.safety_tier.value:<15} {t.group or '-':<12} {summary}")
    return 0


def _call(client: ToolwireClient, args: argparse.Namespace) -> int:
    context = CallContext(caller_id="cli", user_id=args.user_id, session_id=args.session_id)
    result = client.dispatch(args.name, args.args, context=context)
    if args.json:
        print(result.model_dump_json(indent=2))
    elif result.success:
        print(result.output)
    else:
        print(f"error ({result.error_code}): {result.error}", file=sys.stderr)
    return 0 if result.success else 1


def _stubs(client: ToolwireClient, args: argparse.Namespace) -> int:
    sys.stdout.write(client.generate_stubs(args.names))
    return 0


def _model_tools(client: ToolwireClient, args: argparse.Namespace) -> int:
    converted = client.to_model_tools(ModelFormat(args.format), args.names)
    print(json.dumps(converted.tools, indent=2, ensure_ascii=False))
    for d in converted.diagnostics:
        print(f"note: {d.tool_name}{d.path}: {d.message}", file=sys.stderr)
    return 0
