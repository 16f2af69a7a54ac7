"""toolwire: a tool registry for LLM agents, served over gRPC.

from toolwire import ToolRegistry, tool

@tool
async def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

registry = ToolRegistry()
registry.register(add.tool)
result = await registry.dispatch("add", '{"a": 1, "b": 2}')
"""

from .declare import DeclaredTool, as_tool, tool
from .errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ProviderNotFoundError,
    ToolNotFoundError,
    ToolwireError,
)
from .models import (
    CallContext,
    ErrorCode,
    ModelFormat,
    ParameterType,
    SafetyTier,
    ToolDefinition,
    ToolParameter,
    ToolResult,
)
from .registry import ToolRegistry
from .tools import Tool, ToolContext

__all__ = [
    "CallContext",
    "DeclaredTool",
    "DuplicateToolError",
    "ErrorCode",
    "InvalidDefinitionError",
    "ModelFormat",
    "NotOwnerError",
    "ParameterType",
    "ProviderNotFoundError",
    "SafetyTier",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolNotFoundError",
    "ToolParameter",
    "ToolRegistry",
    "ToolResult",
    "ToolwireError",
    "as_tool",
    "tool",
]
