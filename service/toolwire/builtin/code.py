"""`execute_code`: the tool through which a model writes code instead of calls.

The definition is what the model needs to know; running the code is the code
runtime's job. Until a runtime is attached, the handler refuses honestly so a
model (or a misrouted call) gets a clear failure instead of silence.
"""

from __future__ import annotations

from toolwire.declare import tool
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.tools import Tool

DESCRIPTION = """Execute TypeScript code in a sandboxed Deno environment and return what it returns.

Use it for work that takes several tool calls, loops, or computation: inside
the code, call the registry's tools through the generated async functions (one
per tool, named after it, taking one object of named arguments), combine their
results, and `return` the value you want back. The code can reach nothing but
the registry: no files, no network, no environment."""

NO_RUNTIME = (
    "execute_code needs the code runtime, and none is attached to this registry; "
    "call the tools directly instead"
)


def code_tools() -> list[Tool]:
    @tool(
        name="execute_code",
        description=DESCRIPTION,
        safety_tier=SafetyTier.PRIVILEGED,
        group="code",
    )
    async def execute_code(code: str) -> ToolResult:
        """Args:
        code: TypeScript source. Its last `return` (at top level) is the result.
        """
        return ToolResult.fail(ErrorCode.HANDLER_ERROR, NO_RUNTIME)

    return [execute_code.tool]
