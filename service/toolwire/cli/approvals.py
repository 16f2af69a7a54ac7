"""`toolwire approvals`: the person in the loop for calls that need approval.

Unlike `toolwire memory`, this goes through the server (scope `admin`): a
ticket lives in the running server, and only its decision lets the waiting
call run.
"""

from __future__ import annotations

import argparse

from toolwire_client import ToolwireClient

from toolwire.models import ApprovalState, ApprovalTicket

from .remote import ClientRun, Subparsers, add_connection_flags, with_client


def add_commands(commands: Subparsers) -> None:
    approvals: argparse.ArgumentParser = commands.add_parser(
        "approvals", help="watch, approve and deny calls waiting for approval (scope admin)"
    )
    actions = approvals.add_subparsers(dest="action", required=True)

    def action(name: str, help_text: str, run: ClientRun) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        add_connection_flags(sub)
        sub.set_defaults(run=lambda args: with_client(args, run))
        return sub

    watch = action("watch", "print tickets as they change, pending ones first", _watch)
    watch.add_argument("--json", action="store_true", help="one JSON object per line")

    approve = action("approve", "let a ticket's call run once", _approve)
    approve.add_argument("ticket_id", metavar="ID")
    approve.add_argument("--reason", default="")
    approve.add_argument(
        "--remember",
        action="store_true",
        help="also allow this exact command from now on (command-running tools)",
    )

    deny = action("deny", "refuse a ticket's call", _deny)
    deny.add_argument("ticket_id", metavar="ID")
    deny.add_argument("--reason", default="")


def _watch(client: ToolwireClient, args: argparse.Namespace) -> int:
    try:
        for ticket in client.watch_approvals():
            print(ticket.model_dump_json() if args.json else _describe(ticket), flush=True)
    except KeyboardInterrupt:
        pass
    return 0


def _approve(client: ToolwireClient, args: argparse.Namespace) -> int:
    print(_describe(client.approve(args.ticket_id, args.reason, remember=args.remember)))
    return 0


def _deny(client: ToolwireClient, args: argparse.Namespace) -> int:
    print(_describe(client.deny(args.ticket_id, args.reason)))
    return 0


def _describe(ticket: ApprovalTicket) -> str:
    lines = [
        f"{ticket.ticket_id}  {ticket.state.value:<8}  {ticket.tool_name}  "
        f"(requested by {ticket.requested_by or '?'})",
        f"  runs: {ticket.summary}",
    ]
    if ticket.state == ApprovalState.PENDING:
        lines.append(f"  why:  {ticket.reason}")
        lines.append(f"  toolwire approvals approve {ticket.ticket_id}   (or deny)")
    elif ticket.decided_by or ticket.decision_reason:
        lines.append(f"  by:   {ticket.decided_by}: {ticket.decision_reason}".rstrip(": "))
    return "\n".join(lines)
