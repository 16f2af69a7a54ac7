"""Commands that talk to a running server through the Python client, and the
connection flags every such command shares (`toolwire approvals` too)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from toolwire_client import ToolwireClient
from toolwire_client.errors import ToolwireRpcError

from toolwire.errors import ToolwireError
from toolwire.models import ApprovalTicket, CallContext, ErrorCode, ModelFormat, SafetyTier

DEFAULT_TARGET = "127.0.0.1:50051"

Subparsers = Any  # argparse's _SubParsersAction is private
ClientRun = Callable[[ToolwireClient, argparse.Namespace], int]


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """Where the server is and how to authenticate, for every command that connects."""
    parser.add_argument(
        "--target",
        default=os.environ.get("TOOLWIRE_TARGET", DEFAULT_TARGET),
        help="host:port of the server (env TOOLWIRE_TARGET)",
    )
    parser.add_argument(
        "--token",
        default=None,
        help="bearer token (default: env TOOLWIRE_TOKEN, which, unlike a flag, "
        "stays out of the process list)",
    )
    parser.add_argument("--tls", action="store_true", help="connect with TLS (system roots)")
    parser.add_argument(
        "--tls-ca", type=Path, metavar="FILE", help="trust this PEM certificate (implies --tls)"
    )
    parser.add_argument(
        "--tls-server-name",
        metavar="NAME",
        help="the name the server's certificate is for, if not the target's host (implies --tls)",
    )


def connect(args: argparse.Namespace) -> ToolwireClient:
    """A client from the connection flags; raises OSError if the CA file is unreadable."""
    return ToolwireClient(
        args.target,
        token=args.token,
        tls=args.tls,
        root_certificates=args.tls_ca.read_bytes() if args.tls_ca is not None else None,
        server_name_override=args.tls_server_name,
    )


def with_client(args: argparse.Namespace, run: ClientRun) -> int:
    """Runs a command against the server; a failed call is a message and exit code 2."""
    try:
        client = connect(args)
    except OSError as e:
        print(f"toolwire: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        with client:
            return run(client, args)
    except ToolwireError as e:
        print(f"toolwire: {e}", file=sys.stderr)
        if isinstance(e, ToolwireRpcError) and e.code == grpc.StatusCode.UNAUTHENTICATED:
            print("toolwire: pass --token or set TOOLWIRE_TOKEN", file=sys.stderr)
    return 2


def add_commands(commands: Subparsers) -> None:
    def client_command(name: str, help_text: str, run: ClientRun) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(name, help=help_text)
        add_connection_flags(sub)
        sub.set_defaults(run=lambda args: with_client(args, run))
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
    call.add_argument("--ticket", default="", metavar="ID", help="an approved approval ticket")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    stubs = client_command("stubs", "print TypeScript stubs for the tools", _stubs)
    stubs.add_argument("names", nargs="*")

    model_tools = client_command(
        "model-tools", "print the tools in a model API's format", _model_tools
    )
    model_tools.add_argument("--format", required=True, choices=[f.value for f in ModelFormat])
    model_tools.add_argument("names", nargs="*")


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
    result = client.dispatch(args.name, args.args, context=context, approval_ticket=args.ticket)
    if args.json:
        print(result.model_dump_json(indent=2))
    elif result.success:
        print(result.output)
    elif result.error_code == ErrorCode.APPROVAL_REQUIRED and result.approval is not None:
        _print_approval_required(result.approval, args)
    else:
        rule = f" [{result.policy_rule}]" if result.policy_rule else ""
        print(f"error ({result.error_code}){rule}: {result.error}", file=sys.stderr)
    return 0 if result.success else 1


def _print_approval_required(ticket: ApprovalTicket, args: argparse.Namespace) -> None:
    print(
        f"approval required: ticket {ticket.ticket_id}\n"
        f"  runs:   {ticket.summary}\n"
        f"  why:    {ticket.reason}\n"
        f"approve:  toolwire approvals approve {ticket.ticket_id}\n"
        "then run: "
        + shlex.join(
            ["toolwire", "call", args.name, "--args", args.args, "--ticket", ticket.ticket_id]
        ),
        file=sys.stderr,
    )


def _stubs(client: ToolwireClient, args: argparse.Namespace) -> int:
    sys.stdout.write(client.generate_stubs(args.names))
    return 0


def _model_tools(client: ToolwireClient, args: argparse.Namespace) -> int:
    converted = client.to_model_tools(ModelFormat(args.format), args.names)
    print(json.dumps(converted.tools, indent=2, ensure_ascii=False))
    for d in converted.diagnostics:
        print(f"note: {d.tool_name}{d.path}: {d.message}", file=sys.stderr)
    return 0
