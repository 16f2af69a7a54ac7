"""gRPC failures as toolwire's exceptions, for the sync and the async client alike.

The server reports management errors as a gRPC status carrying a
`google.rpc.ErrorInfo` detail in domain "toolwire" (in the standard
`grpc-status-details-bin` trailer). The reasons the core knows become the
core's exceptions; anything else is a `ToolwireRpcError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2
from toolwire.errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ToolNotFoundError,
    ToolwireError,
)

DOMAIN = "toolwire"
STATUS_DETAILS_KEY = "grpc-status-details-bin"


class ToolwireRpcError(ToolwireError):
    """A call that failed at the transport level (unavailable, deadline, bad
    request, unknown provider, …). `reason` and `metadata` come from the
    server's `ErrorInfo` when it sent one."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        *,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        label = f"{code.name} ({reason})" if reason else code.name
        super().__init__(f"{label}: {details}" if details else label)
        self.code = code
        self.details = details
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})


def error_info(
    trailing_metadata: Iterable[tuple[str, Any]] | None,
) -> error_details_pb2.ErrorInfo | None:
    """The toolwire `ErrorInfo` in a call's trailing metadata, if there is one.

    Works on sync metadata (a tuple of pairs) and on `grpc.aio.Metadata` (whose
    iteration yields pairs too); a malformed detail counts as none.
    """
    for key, value in trailing_metadata or ():
        if key != STATUS_DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except Exception:  # a peer's garbage is no reason to lose the real error
            return None
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Is(info.DESCRIPTOR) and detail.Unpack(info) and info.domain == DOMAIN:
                return info
    return None


def error_from_rpc(error: grpc.RpcError, *, name: str = "", typed: bool = True) -> ToolwireError:
    """The exception to raise for a failed call (`raise error_from_rpc(e) from e`).

    `name` is the tool the request was about, used when the server's detail
    does not name it. With `typed=False` the result is always a
    `ToolwireRpcError` (dispatch promises nothing else).
    """
    code, details, trailing = _status_of(error)
    info = error_info(trailing)
    reason = info.reason if info is not None else ""
    metadata = dict(info.metadata) if info is not None else {}
    if typed:
        tool = metadata.get("name") or name
        if reason == "DUPLICATE_TOOL":
            return DuplicateToolError(tool, metadata.get("suggestion", ""))
        if reason == "INVALID_DEFINITION":
            return InvalidDefinitionError(details)
        if reason == "TOOL_NOT_FOUND":
            return ToolNotFoundError(tool)
        if reason == "NOT_OWNER":
            return NotOwnerError(details)
    return ToolwireRpcError(code, details, reason=reason, metadata=metadata)


def _status_of(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, Any]:
    """Code, details and trailing metadata of a sync or aio RPC error (both are
    also calls whose accessors return values, not coroutines)."""
    code = _safe(error, "code") or grpc.StatusCode.UNKNOWN
    details = _safe(error, "details") or ""
    trailing = _safe(error, "trailing_metadata")
    return code, str(details), trailing


def _safe(error: grpc.RpcError, accessor: str) -> Any:
    method = getattr(error, accessor, None)
    if method is None:
        return None
    try:
        return method()
    except Exception:  # an RpcError that is not a call
        return None
