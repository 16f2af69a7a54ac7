"""`execute_code` before a code runtime is attached: defined, and refusing honestly."""

from __future__ import annotations

from toolwire.builtin.code import code_tools
from toolwire.models import ErrorCode, SafetyTier
from toolwire.registry import ToolRegistry


async def test_execute_code_is_defined_and_refuses_without_a_runtime() -> None:
    registry = ToolRegistry()
    for t in code_tools():
        registry.register(t)
    definition = registry.get("execute_code")
    assert definition is not None
    assert definition.safety_tier is SafetyTier.SIDE_EFFECTING
    assert "sandboxed Deno environment" in definition.description
    assert definition.input_schema is not None
    assert definition.input_schema["required"] == ["code"]
    result = await registry.dispatch("execute_code", {"code": "return 1"})
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert "needs the code runtime" in result.error
    missing = await registry.dispatch("execute_code", {})
    assert missing.error_code is ErrorCode.INVALID_ARGUMENTS
