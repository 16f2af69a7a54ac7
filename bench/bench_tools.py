"""The trivial tool the code-mode benchmark calls (loaded with --tools bench_tools)."""

from __future__ import annotations

from toolwire import SafetyTier, tool


@tool(safety_tier=SafetyTier.READ_ONLY)
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text
