"""Tools that the end-to-end tests load into `toolwire serve --tools sample_tools`."""

from __future__ import annotations

from typing import Literal

from toolwire import SafetyTier, tool


@tool(safety_tier=SafetyTier.READ_ONLY, group="math")
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(group="text")
def shout(text: str, style: Literal["upper", "title"] = "upper") -> str:
    """Change the case of a text.

    Args:
        text: What to change.
        style: Which case.
    """
    return text.upper() if style == "upper" else text.title()
