"""What a handler returned, shaped into a result a model can read.

Handlers return whatever is natural (text, dicts, pydantic models, a
`ToolResult`); the model gets text within a byte budget, and programs get the
structured form when it fits. The successful result is built once, at the end,
because building it is a measurable part of a dispatch.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from pydantic import BaseModel

from .models import SandboxPlacement, ToolResult

TRUNCATION_SUFFIX = "\n[output truncated — original size: {size:,} bytes]"


class Output(NamedTuple):
    """A handler's successful output before it becomes a result."""

    text: str
    structured: Any = None


def shape(value: Any) -> Output | ToolResult:
    if isinstance(value, str):
        return Output(value)
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return Output("")
    if isinstance(value, bytes):
        return Output(value.decode("utf-8", errors="replace"))
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = json.dumps(value, ensure_ascii=False, default=str)
        value = json.loads(text)
    return Output(text, value)


def _cut(text: str, max_bytes: int) -> tuple[str, int] | None:
    """The text cut to `max_bytes` (suffix included) on a character boundary,
    and its original size; None when it fits."""
    if len(text) * 4 <= max_bytes:
        return None
    data = text.encode()
    if len(data) <= max_bytes:
        return None
    suffix = TRUNCATION_SUFFIX.format(size=len(data))
    keep = max(0, max_bytes - len(suffix.encode()))
    return data[:keep].decode("utf-8", errors="ignore") + suffix, len(data)


def finish(
    outcome: Output | ToolResult,
    max_bytes: int,
    duration: float,
    sandbox: SandboxPlacement | None = None,
) -> ToolResult:
    """The final result: truncated to the byte budget, with the call's
    duration and where it ran."""
    if isinstance(outcome, Output):
        cut = _cut(outcome.text, max_bytes)
        if cut is None:
            return ToolResult(
                success=True,
                output=outcome.text,
                structured_output=outcome.structured,
                duration_seconds=duration,
                sandbox=sandbox,
            )
        return ToolResult(
            success=True,
            output=cut[0],
            duration_seconds=duration,
            truncated=True,
            original_size_bytes=cut[1],
            sandbox=sandbox,
        )
    cut = _cut(outcome.output, max_bytes)
    update: dict[str, Any] = {"duration_seconds": duration}
    if sandbox is not None:
        update["sandbox"] = sandbox
    if cut is not None:
        update.update(
            output=cut[0], structured_output=None, truncated=True, original_size_bytes=cut[1]
        )
    return outcome.model_copy(update=update)
