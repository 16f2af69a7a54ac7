"""The conformance tools: every definition in tools.json, served by `echo`.

`toolwire serve --no-builtins --tools conformance_tools` (with this folder on
PYTHONPATH) serves them from the server's process; `python conformance_tools.py
HOST:PORT` serves them from this one as a remote provider, so that their
definitions cross the wire. The Python runners load this file by path. Every
tool answers with the arguments it was given after validation, as
structured output, so a dispatch case shows what validation let through
(JSON text parsed into arrays, `null` optional fields dropped) the same way on
every transport.

tools.json holds `toolwire.v1.ToolDefinition` messages in the canonical proto3
JSON mapping, so that any language reads them with its protobuf runtime
(`fromJson(ToolDefinitionSchema, …)` in TypeScript). Here they are mapped
straight to the core's models rather than through a protobuf message, whose
`Struct` would lose the key order the core keeps.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolwire import ParameterType, SafetyTier, Tool, ToolContext, ToolDefinition, ToolParameter

TOOLS_JSON = Path(__file__).resolve().parent / "tools.json"


def _enum(value: str, prefix: str) -> str:
    if not value.startswith(prefix):
        raise ValueError(f"expected an enum name starting with {prefix}, got {value!r}")
    return value.removeprefix(prefix).lower()


def _seconds(duration: str) -> float:
    """A proto3 JSON Duration ("5s", "1.500s") in seconds."""
    if not duration.endswith("s"):
        raise ValueError(f"not a proto3 JSON duration: {duration!r}")
    return float(duration[:-1])


def parameter_from_json(data: Mapping[str, Any]) -> ToolParameter:
    return ToolParameter(
        name=data["name"],
        type=ParameterType(_enum(data["type"], "PARAMETER_TYPE_")),
        description=data.get("description", ""),
        required=data.get("required", False),
        enum_values=tuple(data.get("enumValues", ())),
        json_schema=data.get("jsonSchema", {}),
    )


def definition_from_json(data: Mapping[str, Any]) -> ToolDefinition:
    """A proto3 JSON `ToolDefinition` as the core's model, key order kept."""
    tier = data.get("safetyTier", "SAFETY_TIER_SIDE_EFFECTING")
    return ToolDefinition(
        name=data["name"],
        description=data.get("description", ""),
        parameters=tuple(parameter_from_json(p) for p in data.get("parameters", ())),
        input_schema=data.get("inputSchema"),
        output_schema=data.get("outputSchema"),
        safety_tier=SafetyTier(_enum(tier, "SAFETY_TIER_")),
        group=data.get("group", ""),
        timeout_seconds=_seconds(data["timeout"]) if "timeout" in data else None,
        labels=data.get("labels", {}),
    )


def tools_json() -> list[dict[str, Any]]:
    """The raw fixture: proto3 JSON `ToolDefinition` objects."""
    tools: list[dict[str, Any]] = json.loads(TOOLS_JSON.read_text(encoding="utf-8"))["tools"]
    return tools


def definitions() -> list[ToolDefinition]:
    return [definition_from_json(d) for d in tools_json()]


async def echo(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    """The validated arguments, back as structured output."""
    return dict(arguments)


def tools() -> list[Tool]:
    return [Tool.of(d, echo) for d in definitions()]


# `toolwire serve --tools` registers the `Tool` objects found at module level.
globals().update({f"tool_{t.definition.name}": t for t in tools()})


if __name__ == "__main__":
    from toolwire_client import serve_tools

    logging.basicConfig(level=logging.INFO)
    serve_tools(sys.argv[1], tools(), name="conformance")
