"""`execute_code`: the tool through which a model writes code instead of calls.

The definition is what the model needs to know; running the code is the job of
a `CodeRunner` (the Deno sandbox, wired in by the server). Without one, the
handler refuses honestly so a model gets a clear failure instead of silence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from toolwire.declare import tool
from toolwire.models import ErrorCode, Runtime, SafetyTier, SandboxPlacement, ToolResult
from toolwire.policy.placement import Sandboxing
from toolwire.tools import Tool, ToolContext

CodeRunner = Callable[[str, bool, ToolContext], Awaitable[ToolResult]]
"""Runs `code` (type-checked first when the flag is set) for the caller of
`execute_code` (its principal and call context)."""

SANDBOXING = Sandboxing(SandboxPlacement(runtime=Runtime.DENO, network=False))
"""In the Deno sandbox, whose only network is the registry's own listener."""

DESCRIPTION = """Execute TypeScript code in a sandboxed Deno environment and return what it returns.

Use it for work that takes several tool calls, loops, or computation: inside
the code, call the registry's tools through the generated async functions (one
per tool, named after it, taking one object of named arguments, e.g.
`await memory_read({ query: "tides" })`), combine their results, and `return`
the value you want back. A failed tool call throws a ToolError with `code` and
`message`. The code can reach nothing but the registry: no files, no network,
no environment, no processes."""

NO_RUNTIME = (
    "execute_code needs the code runtime, and none is attached to this registry; "
    "call the tools directly instead"
)

RUN_TIMEOUT_SECONDS = 60.0


def code_tools(runner: CodeRunner | None = None) -> list[Tool]:
    @tool(
        name="execute_code",
        description=DESCRIPTION,
        # Not privileged: the code can only call tools, and each of its calls
        # goes through the caller's policy, approvals and audit on its own.
        safety_tier=SafetyTier.SIDE_EFFECTING,
        group="code",
        timeout_seconds=RUN_TIMEOUT_SECONDS,
    )
    async def execute_code(code: str, context: ToolContext, check: bool = True) -> ToolResult:
        """Args:
        code: TypeScript statements, run as the body of an async function:
            `await` the tool functions and `return` the result.
        check: Type-check the code against the tool functions before running it.
        """
        if runner is None:
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, NO_RUNTIME)
        return await runner(code, check, context)

    return [dataclasses.replace(execute_code.tool, sandboxing=SANDBOXING)]
