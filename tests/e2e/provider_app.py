"""A tool provider in its own process: serves tools over the Provide stream.

Run as `python provider_app.py TARGET MARKER_DIR`; it writes MARKER_DIR/<call>
files when `sleepy` starts so that a test knows a call is in flight.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from toolwire import tool
from toolwire_client import serve_tools

MARKERS = Path(sys.argv[2])


@tool
async def remote_add(a: int, b: int) -> int:
    """Add two integers in the provider's process."""
    await asyncio.sleep(0.01)
    return a + b


@tool
async def sleepy(tag: str) -> str:
    """Sleep for a long time (for tests that kill the provider mid-call)."""
    (MARKERS / tag).write_text("started")
    await asyncio.sleep(60)
    return "woke up"


@tool
def fails(reason: str) -> str:
    """Always fail with the given reason."""
    raise RuntimeError(reason)


if __name__ == "__main__":
    serve_tools(sys.argv[1], [remote_add, sleepy, fails], name="e2e-provider")
