"""What a handler returned, shaped into a result a model can read.

Handlers return whatever is natural (text, dicts, pydantic models, a
`ToolResult`); the model gets text within a byte budget, and programs get the
structured form when it fits.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from .models import ToolResult

TRUNCATION_SUFFIX = "\n[output truncated — original size: {size:,} bytes]"


def result_from_value(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.ok("")
    if isinstance(value, str):
        return ToolResult.ok(value)
    if isinstance(value, bytes):
        return ToolResult.ok(value.decode("utf-8", errors="replace"))
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = json.dumps(value, ensure_ascii=False, default=str)
        value = json.loads(text)
    return ToolResult.ok(text, value)


def truncate(result: ToolResult, max_bytes: int) -> ToolResult:
    """Cut the output to `max_bytes` (suffix included) on a character boundary."""
    if len(result.output) * 4 <= max_bytes:
        return result
    data = result.output.encode()
    if len(data) <= max_bytes:
        return result
    suffix = TRUNCATION_SUFFIX.format(size=len(data))
    keep = max(0, max_bytes - len(suffix.encode()))
    cut = data[:keep].decode("utf-8", errors="ignore") + suffix
    return result.model_copy(
        update={
            "output": cut,
            "structured_output": None,
            "truncated": True,
            "original_size_bytes": len(data),
        }
    )
