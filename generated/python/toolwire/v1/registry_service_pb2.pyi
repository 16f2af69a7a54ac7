import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from toolwire.v1 import tool_pb2 as _tool_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegistryEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REGISTRY_EVENT_KIND_UNSPECIFIED: _ClassVar[RegistryEventKind]
    REGISTRY_EVENT_KIND_SYNCED: _ClassVar[RegistryEventKind]
    REGISTRY_EVENT_KIND_TOOL_ADDED: _ClassVar[RegistryEventKind]
    REGISTRY_EVENT_KIND_TOOL_REMOVED: _ClassVar[RegistryEventKind]
    REGISTRY_EVENT_KIND_PROVIDER_DISCONNECTED: _ClassVar[RegistryEventKind]

class ModelFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_FORMAT_UNSPECIFIED: _ClassVar[ModelFormat]
    MODEL_FORMAT_ANTHROPIC: _ClassVar[ModelFormat]
    MODEL_FORMAT_OPENAI_CHAT: _ClassVar[ModelFormat]
    MODEL_FORMAT_OPENAI_RESPONSES: _ClassVar[ModelFormat]
    MODEL_FORMAT_GEMINI: _ClassVar[ModelFormat]
    MODEL_FORMAT_MCP: _ClassVar[ModelFormat]
REGISTRY_EVENT_KIND_UNSPECIFIED: RegistryEventKind
REGISTRY_EVENT_KIND_SYNCED: RegistryEventKind
REGISTRY_EVENT_KIND_TOOL_ADDED: RegistryEventKind
REGISTRY_EVENT_KIND_TOOL_REMOVED: RegistryEventKind
REGISTRY_EVENT_KIND_PROVIDER_DISCONNECTED: RegistryEventKind
MODEL_FORMAT_UNSPECIFIED: ModelFormat
MODEL_FORMAT_ANTHROPIC: ModelFormat
MODEL_FORMAT_OPENAI_CHAT: ModelFormat
MODEL_FORMAT_OPENAI_RESPONSES: ModelFormat
MODEL_FORMAT_GEMINI: ModelFormat
MODEL_FORMAT_MCP: ModelFormat

class RegisterRequest(_message.Message):
    __slots__ = ("definition", "provider_id", "replace")
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    definition: _tool_pb2.ToolDefinition
    provider_id: str
    replace: bool
    def __init__(self, definition: _Optional[_Union[_tool_pb2.ToolDefinition, _Mapping]] = ..., provider_id: _Optional[str] = ..., replace: _Optional[bool] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("definition",)
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    definition: _tool_pb2.ToolDefinition
    def __init__(self, definition: _Optional[_Union[_tool_pb2.ToolDefinition, _Mapping]] = ...) -> None: ...

class UnregisterRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UnregisterResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("group", "safety_tier", "name_prefix", "page_size", "page_token")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SAFETY_TIER_FIELD_NUMBER: _ClassVar[int]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    group: str
    safety_tier: _tool_pb2.SafetyTier
    name_prefix: str
    page_size: int
    page_token: str
    def __init__(self, group: _Optional[str] = ..., safety_tier: _Optional[_Union[_tool_pb2.SafetyTier, str]] = ..., name_prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("tools", "next_page_token", "registry_version", "etag")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REGISTRY_VERSION_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[_tool_pb2.ToolDefinition]
    next_page_token: str
    registry_version: int
    etag: str
    def __init__(self, tools: _Optional[_Iterable[_Union[_tool_pb2.ToolDefinition, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., registry_version: _Optional[int] = ..., etag: _Optional[str] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("registry_version", "kind", "tool_name", "definition", "provider_id")
    REGISTRY_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    registry_version: int
    kind: RegistryEventKind
    tool_name: str
    definition: _tool_pb2.ToolDefinition
    provider_id: str
    def __init__(self, registry_version: _Optional[int] = ..., kind: _Optional[_Union[RegistryEventKind, str]] = ..., tool_name: _Optional[str] = ..., definition: _Optional[_Union[_tool_pb2.ToolDefinition, _Mapping]] = ..., provider_id: _Optional[str] = ...) -> None: ...

class DispatchRequest(_message.Message):
    __slots__ = ("name", "arguments_json", "context", "approval_ticket")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TICKET_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    context: _tool_pb2.CallContext
    approval_ticket: str
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., context: _Optional[_Union[_tool_pb2.CallContext, _Mapping]] = ..., approval_ticket: _Optional[str] = ...) -> None: ...

class DispatchResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _tool_pb2.ToolResult
    def __init__(self, result: _Optional[_Union[_tool_pb2.ToolResult, _Mapping]] = ...) -> None: ...

class GenerateStubsRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class GenerateStubsResponse(_message.Message):
    __slots__ = ("typescript",)
    TYPESCRIPT_FIELD_NUMBER: _ClassVar[int]
    typescript: str
    def __init__(self, typescript: _Optional[str] = ...) -> None: ...

class ToModelToolsRequest(_message.Message):
    __slots__ = ("format", "names")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    format: ModelFormat
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, format: _Optional[_Union[ModelFormat, str]] = ..., names: _Optional[_Iterable[str]] = ...) -> None: ...

class Diagnostic(_message.Message):
    __slots__ = ("tool_name", "path", "message")
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    tool_name: str
    path: str
    message: str
    def __init__(self, tool_name: _Optional[str] = ..., path: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ToModelToolsResponse(_message.Message):
    __slots__ = ("tools_json", "diagnostics")
    TOOLS_JSON_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    tools_json: str
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    def __init__(self, tools_json: _Optional[str] = ..., diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ...) -> None: ...

class ProvideRequest(_message.Message):
    __slots__ = ("hello", "outcome")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    hello: ProviderHello
    outcome: CallOutcome
    def __init__(self, hello: _Optional[_Union[ProviderHello, _Mapping]] = ..., outcome: _Optional[_Union[CallOutcome, _Mapping]] = ...) -> None: ...

class ProviderHello(_message.Message):
    __slots__ = ("provider_name", "tools")
    PROVIDER_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    provider_name: str
    tools: _containers.RepeatedCompositeFieldContainer[_tool_pb2.ToolDefinition]
    def __init__(self, provider_name: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_tool_pb2.ToolDefinition, _Mapping]]] = ...) -> None: ...

class CallOutcome(_message.Message):
    __slots__ = ("call_id", "result")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    result: _tool_pb2.ToolResult
    def __init__(self, call_id: _Optional[str] = ..., result: _Optional[_Union[_tool_pb2.ToolResult, _Mapping]] = ...) -> None: ...

class ProvideResponse(_message.Message):
    __slots__ = ("accepted", "call", "cancelled")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    accepted: ProviderAccepted
    call: CallOrder
    cancelled: CallCancelled
    def __init__(self, accepted: _Optional[_Union[ProviderAccepted, _Mapping]] = ..., call: _Optional[_Union[CallOrder, _Mapping]] = ..., cancelled: _Optional[_Union[CallCancelled, _Mapping]] = ...) -> None: ...

class ProviderAccepted(_message.Message):
    __slots__ = ("provider_id", "tools")
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    provider_id: str
    tools: _containers.RepeatedCompositeFieldContainer[_tool_pb2.ToolDefinition]
    def __init__(self, provider_id: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_tool_pb2.ToolDefinition, _Mapping]]] = ...) -> None: ...

class CallOrder(_message.Message):
    __slots__ = ("call_id", "name", "arguments_json", "context", "timeout")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    name: str
    arguments_json: str
    context: _tool_pb2.CallContext
    timeout: _duration_pb2.Duration
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., context: _Optional[_Union[_tool_pb2.CallContext, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CallCancelled(_message.Message):
    __slots__ = ("call_id",)
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    def __init__(self, call_id: _Optional[str] = ...) -> None: ...

class DispatchBatchRequest(_message.Message):
    __slots__ = ("calls", "context")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[BatchCall]
    context: _tool_pb2.CallContext
    def __init__(self, calls: _Optional[_Iterable[_Union[BatchCall, _Mapping]]] = ..., context: _Optional[_Union[_tool_pb2.CallContext, _Mapping]] = ...) -> None: ...

class BatchCall(_message.Message):
    __slots__ = ("call_id", "name", "arguments_json", "approval_ticket")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TICKET_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    name: str
    arguments_json: str
    approval_ticket: str
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., approval_ticket: _Optional[str] = ...) -> None: ...

class DispatchBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchResult, _Mapping]]] = ...) -> None: ...

class BatchResult(_message.Message):
    __slots__ = ("call_id", "result")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    result: _tool_pb2.ToolResult
    def __init__(self, call_id: _Optional[str] = ..., result: _Optional[_Union[_tool_pb2.ToolResult, _Mapping]] = ...) -> None: ...

class ApproveRequest(_message.Message):
    __slots__ = ("ticket_id", "reason", "remember")
    TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REMEMBER_FIELD_NUMBER: _ClassVar[int]
    ticket_id: str
    reason: str
    remember: bool
    def __init__(self, ticket_id: _Optional[str] = ..., reason: _Optional[str] = ..., remember: _Optional[bool] = ...) -> None: ...

class ApproveResponse(_message.Message):
    __slots__ = ("ticket",)
    TICKET_FIELD_NUMBER: _ClassVar[int]
    ticket: _tool_pb2.ApprovalTicket
    def __init__(self, ticket: _Optional[_Union[_tool_pb2.ApprovalTicket, _Mapping]] = ...) -> None: ...

class DenyRequest(_message.Message):
    __slots__ = ("ticket_id", "reason")
    TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ticket_id: str
    reason: str
    def __init__(self, ticket_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DenyResponse(_message.Message):
    __slots__ = ("ticket",)
    TICKET_FIELD_NUMBER: _ClassVar[int]
    ticket: _tool_pb2.ApprovalTicket
    def __init__(self, ticket: _Optional[_Union[_tool_pb2.ApprovalTicket, _Mapping]] = ...) -> None: ...

class WatchApprovalsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchApprovalsResponse(_message.Message):
    __slots__ = ("ticket",)
    TICKET_FIELD_NUMBER: _ClassVar[int]
    ticket: _tool_pb2.ApprovalTicket
    def __init__(self, ticket: _Optional[_Union[_tool_pb2.ApprovalTicket, _Mapping]] = ...) -> None: ...
