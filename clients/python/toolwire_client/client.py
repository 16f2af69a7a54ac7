"""The blocking client, over a `grpc.Channel`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
from toolwire.models import CallContext, ModelFormat, SafetyTier, ToolDefinition, ToolResult
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

from . import _wire
from ._wire import ModelToolsResult
from .errors import error_from_rpc

_Response = TypeVar("_Response")


class ToolwireClient:
    """Registers, lists and calls tools of a toolwire registry.

    Management errors raise the core's exceptions (`DuplicateToolError`,
    `InvalidDefinitionError`, `ToolNotFoundError`, `NotOwnerError`); other
    failed calls raise `ToolwireRpcError`. `dispatch` returns a failed
    `ToolResult` for a failed tool and raises only for transport problems.

    A channel passed in stays the caller's: `close()` closes only the channel
    the client created itself.
    """

    def __init__(
        self,
        target: str = _wire.DEFAULT_TARGET,
        *,
        channel: grpc.Channel | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
        max_message_bytes: int = _wire.DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._owns_channel = channel is None
        self._channel: grpc.Channel = (
            channel
            if channel is not None
            else grpc.insecure_channel(target, options=_wire.channel_options(max_message_bytes))
        )
        self._stub = rpc.RegistryServiceStub(self._channel)
        self._metadata = tuple(metadata)
        self._timeout = timeout

    def register(self, definition: ToolDefinition, provider_id: str) -> ToolDefinition:
        """Registers a tool served by the provider `provider_id` (see `Provider`);
        returns the definition as the registry stores it."""
        response = self._call(
            self._stub.Register,
            _wire.register_request(definition, provider_id),
            name=definition.name,
        )
        return _wire.registered(response)

    def unregister(self, name: str) -> None:
        self._call(self._stub.Unregister, rpb.UnregisterRequest(name=name), name=name)

    def list(
        self, *, group: str = "", tier: SafetyTier | None = None, name_prefix: str = ""
    ) -> list[ToolDefinition]:
        """Tools sorted by name; empty filters match everything."""
        response = self._call(self._stub.List, _wire.list_request(group, tier, name_prefix))
        return _wire.listed(response)

    def dispatch(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        context: CallContext | None = None,
        timeout: float | None = None,
    ) -> ToolResult:
        """Calls a tool. `arguments` is a mapping (sent as JSON) or the model's
        raw JSON text, passed as it is.

        `timeout` is this call's gRPC deadline (default: the client's); the
        server shortens the tool's own timeout to it and answers with a failed
        `ToolResult` (TIMEOUT), but a deadline that passes before the answer
        arrives is a transport error: `ToolwireRpcError(DEADLINE_EXCEEDED)`.
        """
        response = self._call(
            self._stub.Dispatch,
            _wire.dispatch_request(name, arguments, context),
            name=name,
            timeout=timeout,
            typed=False,
        )
        return _wire.dispatched(response)

    def generate_stubs(self, names: Sequence[str] = ()) -> str:
        """TypeScript functions that call the tools (all of them if `names` is empty)."""
        response = self._call(self._stub.GenerateStubs, _wire.stubs_request(names))
        return str(response.typescript)

    def to_model_tools(self, fmt: ModelFormat | str, names: Sequence[str] = ()) -> ModelToolsResult:
        """The tools in a model API's format (all of them if `names` is empty)."""
        response = self._call(self._stub.ToModelTools, _wire.model_tools_request(fmt, names))
        return _wire.model_tools(response)

    def close(self) -> None:
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> ToolwireClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(
        self,
        method: Callable[..., _Response],
        request: Any,
        *,
        name: str = "",
        timeout: float | None = None,
        typed: bool = True,
    ) -> _Response:
        try:
            return method(
                request,
                timeout=timeout if timeout is not None else self._timeout,
                metadata=self._metadata,
            )
        except grpc.RpcError as e:
            raise error_from_rpc(e, name=name, typed=typed) from e
