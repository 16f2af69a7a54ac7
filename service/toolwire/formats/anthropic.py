"""Anthropic Messages API tools.

Anthropic takes the JSON Schema as it is, so the registry's schema goes out
unchanged and nothing needs reporting.
"""

from __future__ import annotations

from typing import Any

from toolwire.models import ToolDefinition

from .common import Diagnostic, input_schema


def convert(definition: ToolDefinition) -> tuple[dict[str, Any], list[Diagnostic]]:
    tool: dict[str, Any] = {"name": definition.name}
    if definition.description:
        tool["description"] = definition.description
    tool["input_schema"] = input_schema(definition)
    return tool, []
