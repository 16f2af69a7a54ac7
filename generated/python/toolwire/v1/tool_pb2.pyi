import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ParameterType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARAMETER_TYPE_UNSPECIFIED: _ClassVar[ParameterType]
    PARAMETER_TYPE_STRING: _ClassVar[ParameterType]
    PARAMETER_TYPE_NUMBER: _ClassVar[ParameterType]
    PARAMETER_TYPE_INTEGER: _ClassVar[ParameterType]
    PARAMETER_TYPE_BOOLEAN: _ClassVar[ParameterType]
    PARAMETER_TYPE_OBJECT: _ClassVar[ParameterType]
    PARAMETER_TYPE_ARRAY: _ClassVar[ParameterType]

class SafetyTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SAFETY_TIER_UNSPECIFIED: _ClassVar[SafetyTier]
    SAFETY_TIER_READ_ONLY: _ClassVar[SafetyTier]
    SAFETY_TIER_SIDE_EFFECTING: _ClassVar[SafetyTier]
    SAFETY_TIER_PRIVILEGED: _ClassVar[SafetyTier]

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_ARGUMENTS: _ClassVar[ErrorCode]
    ERROR_CODE_DENIED_BY_POLICY: _ClassVar[ErrorCode]
    ERROR_CODE_APPROVAL_REQUIRED: _ClassVar[ErrorCode]
    ERROR_CODE_TIMEOUT: _ClassVar[ErrorCode]
    ERROR_CODE_HANDLER_ERROR: _ClassVar[ErrorCode]
    ERROR_CODE_PROVIDER_UNAVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_RESOURCE_EXHAUSTED: _ClassVar[ErrorCode]
    ERROR_CODE_CANCELLED: _ClassVar[ErrorCode]

class Runtime(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUNTIME_UNSPECIFIED: _ClassVar[Runtime]
    RUNTIME_HOST: _ClassVar[Runtime]
    RUNTIME_DENO: _ClassVar[Runtime]
    RUNTIME_PROVIDER: _ClassVar[Runtime]

class ApprovalState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_STATE_UNSPECIFIED: _ClassVar[ApprovalState]
    APPROVAL_STATE_PENDING: _ClassVar[ApprovalState]
    APPROVAL_STATE_APPROVED: _ClassVar[ApprovalState]
    APPROVAL_STATE_DENIED: _ClassVar[ApprovalState]
    APPROVAL_STATE_USED: _ClassVar[ApprovalState]
    APPROVAL_STATE_EXPIRED: _ClassVar[ApprovalState]
PARAMETER_TYPE_UNSPECIFIED: ParameterType
PARAMETER_TYPE_STRING: ParameterType
PARAMETER_TYPE_NUMBER: ParameterType
PARAMETER_TYPE_INTEGER: ParameterType
PARAMETER_TYPE_BOOLEAN: ParameterType
PARAMETER_TYPE_OBJECT: ParameterType
PARAMETER_TYPE_ARRAY: ParameterType
SAFETY_TIER_UNSPECIFIED: SafetyTier
SAFETY_TIER_READ_ONLY: SafetyTier
SAFETY_TIER_SIDE_EFFECTING: SafetyTier
SAFETY_TIER_PRIVILEGED: SafetyTier
ERROR_CODE_UNSPECIFIED: ErrorCode
ERROR_CODE_NOT_FOUND: ErrorCode
ERROR_CODE_INVALID_ARGUMENTS: ErrorCode
ERROR_CODE_DENIED_BY_POLICY: ErrorCode
ERROR_CODE_APPROVAL_REQUIRED: ErrorCode
ERROR_CODE_TIMEOUT: ErrorCode
ERROR_CODE_HANDLER_ERROR: ErrorCode
ERROR_CODE_PROVIDER_UNAVAILABLE: ErrorCode
ERROR_CODE_RESOURCE_EXHAUSTED: ErrorCode
ERROR_CODE_CANCELLED: ErrorCode
RUNTIME_UNSPECIFIED: Runtime
RUNTIME_HOST: Runtime
RUNTIME_DENO: Runtime
RUNTIME_PROVIDER: Runtime
APPROVAL_STATE_UNSPECIFIED: ApprovalState
APPROVAL_STATE_PENDING: ApprovalState
APPROVAL_STATE_APPROVED: ApprovalState
APPROVAL_STATE_DENIED: ApprovalState
APPROVAL_STATE_USED: ApprovalState
APPROVAL_STATE_EXPIRED: ApprovalState

class ToolParameter(_message.Message):
    __slots__ = ("name", "type", "description", "required", "enum_values", "json_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    ENUM_VALUES_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: ParameterType
    description: str
    required: bool
    enum_values: _containers.RepeatedScalarFieldContainer[str]
    json_schema: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[ParameterType, str]] = ..., description: _Optional[str] = ..., required: _Optional[bool] = ..., enum_values: _Optional[_Iterable[str]] = ..., json_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "parameters", "input_schema", "output_schema", "safety_tier", "group", "timeout", "labels", "input_schema_json", "output_schema_json", "requires_approval", "command_argument", "max_concurrency")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SAFETY_TIER_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_ARGUMENT_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: _containers.RepeatedCompositeFieldContainer[ToolParameter]
    input_schema: _struct_pb2.Struct
    output_schema: _struct_pb2.Struct
    safety_tier: SafetyTier
    group: str
    timeout: _duration_pb2.Duration
    labels: _containers.ScalarMap[str, str]
    input_schema_json: str
    output_schema_json: str
    requires_approval: bool
    command_argument: str
    max_concurrency: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Iterable[_Union[ToolParameter, _Mapping]]] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., output_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., safety_tier: _Optional[_Union[SafetyTier, str]] = ..., group: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., input_schema_json: _Optional[str] = ..., output_schema_json: _Optional[str] = ..., requires_approval: _Optional[bool] = ..., command_argument: _Optional[str] = ..., max_concurrency: _Optional[int] = ...) -> None: ...

class CallContext(_message.Message):
    __slots__ = ("caller_id", "session_id", "user_id")
    CALLER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    caller_id: str
    session_id: str
    user_id: str
    def __init__(self, caller_id: _Optional[str] = ..., session_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("success", "output", "error", "error_code", "structured_output", "duration", "truncated", "original_size_bytes", "approval", "sandbox", "policy_rule")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    POLICY_RULE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    output: str
    error: str
    error_code: ErrorCode
    structured_output: _struct_pb2.Value
    duration: _duration_pb2.Duration
    truncated: bool
    original_size_bytes: int
    approval: ApprovalTicket
    sandbox: SandboxPlacement
    policy_rule: str
    def __init__(self, success: _Optional[bool] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., error_code: _Optional[_Union[ErrorCode, str]] = ..., structured_output: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., truncated: _Optional[bool] = ..., original_size_bytes: _Optional[int] = ..., approval: _Optional[_Union[ApprovalTicket, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxPlacement, _Mapping]] = ..., policy_rule: _Optional[str] = ...) -> None: ...

class SandboxPlacement(_message.Message):
    __slots__ = ("runtime", "network", "memory_limit_bytes")
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    runtime: Runtime
    network: bool
    memory_limit_bytes: int
    def __init__(self, runtime: _Optional[_Union[Runtime, str]] = ..., network: _Optional[bool] = ..., memory_limit_bytes: _Optional[int] = ...) -> None: ...

class ApprovalTicket(_message.Message):
    __slots__ = ("ticket_id", "tool_name", "arguments_json", "summary", "requested_by", "reason", "state", "created_at", "expires_at", "decided_by", "decision_reason", "context")
    TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    DECISION_REASON_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    ticket_id: str
    tool_name: str
    arguments_json: str
    summary: str
    requested_by: str
    reason: str
    state: ApprovalState
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    decided_by: str
    decision_reason: str
    context: CallContext
    def __init__(self, ticket_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., summary: _Optional[str] = ..., requested_by: _Optional[str] = ..., reason: _Optional[str] = ..., state: _Optional[_Union[ApprovalState, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., decided_by: _Optional[str] = ..., decision_reason: _Optional[str] = ..., context: _Optional[_Union[CallContext, _Mapping]] = ...) -> None: ...
