"""Python client for toolwire: a blocking and an asyncio client over the
generated gRPC stubs, and a provider that serves tools from this process.

    from toolwire_client import ToolwireClient

    with ToolwireClient("127.0.0.1:50051") as client:
        result = client.dispatch("memory_read", {"key": "notes"})
"""

from toolwire.errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ToolNotFoundError,
    ToolwireError,
)
from toolwire.models import (
    ApprovalState,
    ApprovalTicket,
    CallContext,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)

from ._wire import BatchCall, BatchOutcome, Diagnostic, ModelToolsResult
from .aio import AsyncToolwireClient
from .client import ToolwireClient
from .errors import ToolwireRpcError, error_from_rpc
from .provider import Provider, serve_tools

__all__ = [
    "ApprovalState",
    "ApprovalTicket",
    "AsyncToolwireClient",
    "BatchCall",
    "BatchOutcome",
    "CallContext",
    "Diagnostic",
    "DuplicateToolError",
    "InvalidDefinitionError",
    "ModelFormat",
    "ModelToolsResult",
    "NotOwnerError",
    "Provider",
    "SafetyTier",
    "ToolDefinition",
    "ToolNotFoundError",
    "ToolResult",
    "ToolwireClient",
    "ToolwireError",
    "ToolwireRpcError",
    "error_from_rpc",
    "serve_tools",
]
