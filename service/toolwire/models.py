"""The core's vocabulary: pydantic models that mirror toolwire.v1's messages.

The core speaks these, never protobuf; `toolwire.convert` is the one place
that maps them to and from the wire.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

JsonObject = dict[str, Any]


class ParameterType(StrEnum):
    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    OBJECT = "object"
    ARRAY = "array"


class SafetyTier(StrEnum):
    READ_ONLY = "read_only"
    SIDE_EFFECTING = "side_effecting"
    PRIVILEGED = "privileged"


class ErrorCode(StrEnum):
    NOT_FOUND = "not_found"
    INVALID_ARGUMENTS = "invalid_arguments"
    DENIED_BY_POLICY = "denied_by_policy"
    APPROVAL_REQUIRED = "approval_required"
    TIMEOUT = "timeout"
    HANDLER_ERROR = "handler_error"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    CANCELLED = "cancelled"


class ModelFormat(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    GEMINI = "gemini"
    MCP = "mcp"


_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolParameter(BaseModel):
    """One top-level argument: the simple form of an input schema."""

    model_config = _FROZEN

    name: str
    type: ParameterType
    description: str = ""
    required: bool = False
    enum_values: tuple[str, ...] = ()
    json_schema: JsonObject = Field(default_factory=dict)
    """Extra JSON Schema keywords for this parameter (items, properties, default, …)."""


class ToolDefinition(BaseModel):
    """What a model and a caller need to know about a tool.

    Either `parameters` or `input_schema` may be given; the registry fills in
    the other when it stores the definition.
    """

    model_config = _FROZEN

    name: str
    description: str = ""
    parameters: tuple[ToolParameter, ...] = ()
    input_schema: JsonObject | None = None
    output_schema: JsonObject | None = None
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING
    group: str = ""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """None means the registry's default."""
    labels: dict[str, str] = Field(default_factory=dict)


class CallContext(BaseModel):
    """Who is calling: the caller, the conversation, the end user."""

    model_config = _FROZEN

    caller_id: str = ""
    session_id: str = ""
    user_id: str = ""


class ToolResult(BaseModel):
    """The outcome of one call. Failures are values, never exceptions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    success: bool
    output: str = ""
    error: str = ""
    error_code: ErrorCode | None = None
    structured_output: Any = None
    duration_seconds: float = 0.0
    truncated: bool = False
    original_size_bytes: int = 0

    @model_validator(mode="after")
    def _error_iff_failed(self) -> ToolResult:
        if self.success and (self.error or self.error_code is not None):
            raise ValueError("a successful result carries no error")
        if not self.success and not (self.error and self.error_code is not None):
            raise ValueError("a failed result needs an error message and an error code")
        return self

    @classmethod
    def ok(cls, output: str, structured_output: Any = None) -> ToolResult:
        return cls(success=True, output=output, structured_output=structured_output)

    @classmethod
    def fail(cls, code: ErrorCode, error: str) -> ToolResult:
        return cls(success=False, error=error or code.value, error_code=code)
