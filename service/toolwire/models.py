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
    requires_approval: bool = False
    """Every call needs an approved ticket, whatever the tier."""
    command_argument: str = ""
    """The argument holding a shell command line: the tool is command-running,
    and exec approvals decide its calls."""
    max_concurrency: int = Field(default=0, ge=0)
    """At most this many calls at once (0: no limit of the tool's own)."""


class CallContext(BaseModel):
    """Who is calling: the caller, the conversation, the end user."""

    model_config = _FROZEN

    caller_id: str = ""
    session_id: str = ""
    user_id: str = ""


class Runtime(StrEnum):
    HOST = "host"
    DENO = "deno"
    PROVIDER = "provider"


class SandboxPlacement(BaseModel):
    """Layer 3 of the policy: where a call runs, with or without network, under
    which memory cap (None: none)."""

    model_config = _FROZEN

    runtime: Runtime = Runtime.HOST
    network: bool = True
    memory_limit_bytes: int | None = Field(default=None, gt=0)


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    USED = "used"
    EXPIRED = "expired"


class ApprovalTicket(BaseModel):
    """One call waiting for (or granted) a person's approval."""

    model_config = _FROZEN

    ticket_id: str
    tool_name: str
    arguments_json: str
    summary: str
    requested_by: str
    reason: str
    state: ApprovalState = ApprovalState.PENDING
    created_at: float = 0.0
    """Unix time."""
    expires_at: float = 0.0
    """Unix time."""
    decided_by: str = ""
    decision_reason: str = ""
    context: CallContext = Field(default_factory=CallContext)


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
    approval: ApprovalTicket | None = None
    """For APPROVAL_REQUIRED: the ticket to approve."""
    sandbox: SandboxPlacement | None = None
    """Where the call ran, as the policy resolved it."""
    policy_rule: str = ""
    """For DENIED_BY_POLICY: the rule that denied."""

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
