"""`toolwire`: run the registry, talk to a running one, or tend its memory.

toolwire serve [--port 50051] [--tools pkg.module ...] [--data-dir .toolwire]
toolwire list | call NAME --args JSON | stubs | model-tools --format F
toolwire memory pending|approve|reject|set-permission ...
toolwire audit [--limit N] | exec-allowlist list|add|remove ...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import allowlist, approvals, audit, config, import_mcp, mcp, memory, remote, serve


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="toolwire", description="A tool registry for LLM agents.")
    commands = root.add_subparsers(dest="command", required=True)
    serve.add_commands(commands)
    remote.add_commands(commands)
    approvals.add_commands(commands)
    memory.add_commands(commands)
    audit.add_commands(commands)
    allowlist.add_commands(commands)
    config.add_commands(commands)
    mcp.add_commands(commands)
    import_mcp.add_commands(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
