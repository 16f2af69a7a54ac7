"""Management errors as gRPC statuses with a machine-readable `ErrorInfo`.

Clients in any language can branch on the reason (and read the suggested free
name of a duplicate) without parsing the message.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from toolwire.convert import ConversionError
from toolwire.errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ProviderNotFoundError,
    ToolNotFoundError,
)

DOMAIN = "toolwire"
STATUS_DETAILS_KEY = "grpc-status-details-bin"


def status_of(error: Exception) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The status code, ErrorInfo reason and metadata that describe `error`."""
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


def rich_status(error: Exception) -> tuple[grpc.StatusCode, str, tuple[tuple[str, bytes], ...]]:
    """Code, message and the trailing metadata that carries the ErrorInfo."""
    code, reason, metadata = status_of(error)
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata))
    status = status_pb2.Status(code=code.value[0], message=str(error), details=[detail])
    return code, str(error), ((STATUS_DETAILS_KEY, status.SerializeToString()),)
