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

from .auth import Principal, Scope
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
    ApprovalState,
    ApprovalTicket,
    CallContext,
    ErrorCode,
    ModelFormat,
    ParameterType,
    Runtime,
    SafetyTier,
    SandboxPlacement,
    ToolDefinition,
    ToolParameter,
    ToolResult,
)
from .registry import ToolRegistry
from .tools import Tool, ToolContext

__all__ = [
    "ApprovalState",
    "ApprovalTicket",
    "CallContext",
    "DeclaredTool",
    "DuplicateToolError",
    "ErrorCode",
    "InvalidDefinitionError",
    "ModelFormat",
    "NotOwnerError",
    "ParameterType",
    "Principal",
    "ProviderNotFoundError",
    "Runtime",
    "SafetyTier",
    "SandboxPlacement",
    "Scope",
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
