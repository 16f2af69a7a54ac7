"""Management errors as statuses with a machine-readable `ErrorInfo`.

Clients in any language can branch on the reason (and read the suggested free
name of a duplicate) without parsing the message. One mapping (`status_of`)
serves both listeners: `rich_status` renders it for grpc.aio, `connect_error`
for the gRPC-web/Connect listener, where the same `ErrorInfo` travels in
`grpc-status-details-bin` (gRPC-web) or the error's `details` (Connect).
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from protobuf.wkt import Any as ConnectAny

from toolwire.approvals import (
    ApprovalWatchOverflowError,
    TicketNotFoundError,
    TicketStateError,
)
from toolwire.auth import AuthenticationError, ScopeError
from toolwire.batch import BatchError
from toolwire.convert import ConversionError
from toolwire.errors import (
    ApprovalsOffError,
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    NotVisibleError,
    ProviderNotFoundError,
    ToolNotFoundError,
)
from toolwire.events import WatchOverflowError
from toolwire.paging import PageTokenError
from toolwire.policy.allowlist import AllowlistError

DOMAIN = "toolwire"
STATUS_DETAILS_KEY = "grpc-status-details-bin"


def status_of(error: Exception) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The status code, ErrorInfo reason and metadata that describe `error`."""
    if isinstance(error, AuthenticationError):
        return grpc.StatusCode.UNAUTHENTICATED, error.reason, {}
    if isinstance(error, ScopeError):
        meta = {"principal": error.principal, "scope": error.scope.value}
        return grpc.StatusCode.PERMISSION_DENIED, "SCOPE_MISSING", meta
    if isinstance(error, NotVisibleError):
        return grpc.StatusCode.PERMISSION_DENIED, "DENIED_BY_POLICY", {"name": error.name}
    if isinstance(error, BatchError):
        return grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BATCH", {}
    if isinstance(error, TicketNotFoundError):
        return grpc.StatusCode.NOT_FOUND, "TICKET_NOT_FOUND", {"ticket_id": error.ticket_id}
    if isinstance(error, TicketStateError):
        meta = {"ticket_id": error.ticket.ticket_id, "state": error.ticket.state.value}
        return grpc.StatusCode.FAILED_PRECONDITION, "TICKET_NOT_PENDING", meta
    if isinstance(error, ApprovalWatchOverflowError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_OVERFLOW", {}
    if isinstance(error, AllowlistError):
        return grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PATTERN", {}
    if isinstance(error, ApprovalsOffError):
        return grpc.StatusCode.FAILED_PRECONDITION, "APPROVALS_OFF", {}
    if isinstance(error, PageTokenError):
        return grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE", {}
    if isinstance(error, WatchOverflowError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_OVERFLOW", {}
    if isinstance(error, DuplicateToolError):
        meta = {"name": error.name, "suggestion": error.suggestion}
        return grpc.StatusCode.ALREADY_EXISTS, "DUPLICATE_TOOL", meta
    if isinstance(error, InvalidDefinitionError | ConversionError):
        return grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DEFINITION", {}
    if isinstance(error, ToolNotFoundError):
        return grpc.StatusCode.NOT_FOUND, "TOOL_NOT_FOUND", {"name": error.name}
    if isinstance(error, NotOwnerError):
        return grpc.StatusCode.PERMISSION_DENIED, "NOT_OWNER", {}
    if isinstance(error, ProviderNotFoundError):
        return grpc.StatusCode.FAILED_PRECONDITION, "PROVIDER_NOT_FOUND", {}
    return grpc.StatusCode.INTERNAL, "INTERNAL", {}


def error_info(
    reason: str, metadata: Mapping[str, str] | None = None
) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata or {})


def rich_status(error: Exception) -> tuple[grpc.StatusCode, str, tuple[tuple[str, bytes], ...]]:
    """Code, message and the trailing metadata that carries the ErrorInfo."""
    code, reason, metadata = status_of(error)
    detail = any_pb2.Any()
    detail.Pack(error_info(reason, metadata))
    status = status_pb2.Status(code=code.value[0], message=str(error), details=[detail])
    return code, str(error), ((STATUS_DETAILS_KEY, status.SerializeToString()),)


def connect_code(code: grpc.StatusCode) -> Code:
    """The Connect code of a gRPC status code (Connect spells CANCELLED with one L)."""
    if code is grpc.StatusCode.OK:
        raise ValueError("OK is not an error code")
    return Code.CANCELED if code is grpc.StatusCode.CANCELLED else Code[code.name]


def connect_error_with(
    code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str] | None = None
) -> ConnectError:
    """A ConnectError carrying a toolwire ErrorInfo, for errors of the HTTP
    listener itself (run tokens) as well as the mapped management errors."""
    info = error_info(reason, metadata)
    # connectrpc's details are messages of its own protobuf runtime; an Any
    # passes through as is, so the google.protobuf ErrorInfo is packed by hand.
    detail = ConnectAny(
        type_url=f"type.googleapis.com/{info.DESCRIPTOR.full_name}",
        value=info.SerializeToString(),
    )
    return ConnectError(connect_code(code), message, details=[detail])


def connect_error(error: Exception) -> ConnectError:
    """The Connect twin of `rich_status`: same code, reason and metadata."""
    code, reason, metadata = status_of(error)
    return connect_error_with(code, reason, str(error), metadata)
