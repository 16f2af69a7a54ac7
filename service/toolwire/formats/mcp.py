"""Model Context Protocol `tools/list` entries.

The annotations are hints derived from the safety tier, so MCP clients can
apply their own confirmation policy without knowing toolwire's tiers.
"""

from __future__ import annotations

import copy
from typing import Any

from toolwire.models import SafetyTier, ToolDefinition

from .common import Diagnostic, Report, input_schema, types_of


def convert(definition: ToolDefinition) -> tuple[dict[str, Any], list[Diagnostic]]:
    report = Report(definition.name)
    tool: dict[str, Any] = {"name": definition.name}
    if "title" in definition.labels:
        tool["title"] = definition.labels["title"]
    if definition.description:
        tool["description"] = definition.description
    tool["inputSchema"] = input_schema(definition)
    output = definition.output_schema
    if output is not None:
        # The MCP schema types outputSchema as an object schema; clients that
        # validate tools/list would reject the whole list over one tool.
        if types_of(output) == ["object"]:
            tool["outputSchema"] = copy.deepcopy(output)
        else:
            report.add(
                "",
                "outputSchema left out: MCP requires an object schema "
                f'("type": "object"), the output schema has type {output.get("type")!r}',
            )
    read_only = definition.safety_tier is SafetyTier.READ_ONLY
    tool["annotations"] = {
        "readOnlyHint": read_only,
        "destructiveHint": definition.safety_tier is SafetyTier.PRIVILEGED,
        "idempotentHint": read_only,
        "openWorldHint": definition.labels.get("open_world") == "true",
    }
    return tool, report.diagnostics
