"""Tool definitions in the formats that model APIs expect.

Every model API has its own tool envelope and its own dialect of JSON Schema.
One converter per API turns the registry's definitions (whose JSON Schema is
the single source of truth) into that dialect, and says in `diagnostics` what
it had to change or leave out, so nothing is lost without a trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolwire.models import ModelFormat, ToolDefinition

from . import anthropic, gemini, mcp, openai
from .common import Diagnostic, ModelTools

__all__ = ["Diagnostic", "ModelTools", "to_model_tools"]

_Converter = Callable[[ToolDefinition], tuple[dict[str, Any] | None, list[Diagnostic]]]

_CONVERTERS: dict[ModelFormat, _Converter] = {
    ModelFormat.ANTHROPIC: anthropic.convert,
    ModelFormat.OPENAI_CHAT: openai.chat_completions,
    ModelFormat.OPENAI_RESPONSES: openai.responses,
    ModelFormat.GEMINI: gemini.convert,
    ModelFormat.MCP: mcp.convert,
}


def to_model_tools(definitions: Sequence[ToolDefinition], fmt: ModelFormat) -> ModelTools:
    """`definitions` (normalized, as the registry stores them) in the format
    `fmt`, in the order given. A tool the API cannot take at all is left out,
    with a diagnostic that says why; the definitions are never modified."""
    convert = _CONVERTERS[ModelFormat(fmt)]
    tools: list[dict[str, Any]] = []
    diagnostics: list[Diagnostic] = []
    for definition in definitions:
        tool, found = convert(definition)
        if tool is not None:
            tools.append(tool)
        diagnostics.extend(found)
    return ModelTools(tools=tools, diagnostics=diagnostics)
