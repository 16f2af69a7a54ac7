"""The blocking client, over a `grpc.Channel`."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
from toolwire import convert
from toolwire.events import RegistryEvent
from toolwire.models import (
    ApprovalTicket,
    CallContext,
    ModelFormat,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import registry_service_pb2_grpc as rpc

from . import _channel, _wire
from ._wire import BatchItem, BatchOutcome, ModelToolsResult
from .errors import error_from_rpc

_Response = TypeVar("_Response")
_Item = TypeVar("_Item")


class ToolwireClient:
    """Registers, lists and calls tools of a toolwire registry.

    Management errors raise the core's exceptions (`DuplicateToolError`,
    `InvalidDefinitionError`, `ToolNotFoundError`, `NotOwnerError`); other
    failed calls raise `ToolwireRpcError`. `dispatch` returns a failed
    `ToolResult` for a failed tool and raises only for transport problems.

    A channel passed in stays the caller's: `close()` closes only the channel
    the client created itself.

    Every call carries `token` (default: env `TOOLWIRE_TOKEN`; `""` sends
    none) as `authorization: Bearer <token>`. With `tls=True` the client's own
    channel uses TLS: `root_certificates` (PEM) to trust instead of the
    system's, `client_certificate` as (certificate chain, private key) for
    mutual TLS, and `server_name_override` when the certificate's name is not
    the target's host (e.g. "localhost" reached at 127.0.0.1). Any of those
    three implies `tls`.
    """

    def __init__(
        self,
        target: str = _wire.DEFAULT_TARGET,
        *,
        channel: grpc.Channel | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
        max_message_bytes: int = _channel.DEFAULT_MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: bool = False,
        root_certificates: bytes | None = None,
        client_certificate: tuple[bytes, bytes] | None = None,
        server_name_override: str | None = None,
    ) -> None:
        connection = _channel.Connection.resolve(
            target,
            channel=channel,
            metadata=metadata,
            token=token,
            tls=tls,
            root_certificates=root_certificates,
            client_certificate=client_certificate,
            server_name_override=server_name_override,
            max_message_bytes=max_message_bytes,
        )
        self._owns_channel = channel is None
        self._channel: grpc.Channel = channel if channel is not None else connection.sync_channel()
        self._stub = rpc.RegistryServiceStub(self._channel)
        self._metadata = connection.call_metadata(own_channel=self._owns_channel)
        self._timeout = timeout

    def register(
        self, definition: ToolDefinition, provider_id: str, *, replace: bool = False
    ) -> ToolDefinition:
        """Registers a tool served by the provider `provider_id` (see `Provider`);
        returns the definition as the registry stores it. `replace` takes over a
        tool of the same name that the same principal registered before (say,
        from a connection that broke); another principal's tool stays."""
        response = self._call(
            self._stub.Register,
            _wire.register_request(definition, provider_id, replace),
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
        approval_ticket: str = "",
    ) -> ToolResult:
        """Calls a tool. `arguments` is a mapping (sent as JSON) or the model's
        raw JSON text, passed as it is.

        `timeout` is this call's gRPC deadline (default: the client's); the
        server shortens the tool's own timeout to it and answers with a failed
        `ToolResult` (TIMEOUT), but a deadline that passes before the answer
        arrives is a transport error: `ToolwireRpcError(DEADLINE_EXCEEDED)`.

        A call that needs a person's approval fails with APPROVAL_REQUIRED and
        `result.approval` holds the ticket; once approved, the same call with
        `approval_ticket=<its id>` runs, once.
        """
        response = self._call(
            self._stub.Dispatch,
            _wire.dispatch_request(name, arguments, context, approval_ticket),
            name=name,
            timeout=timeout,
            typed=False,
        )
        return _wire.dispatched(response)

    def dispatch_batch(
        self,
        calls: Sequence[BatchItem],
        *,
        context: CallContext | None = None,
        timeout: float | None = None,
    ) -> builtins.list[BatchOutcome]:
        """Calls the tools a model asked for in one turn, one outcome per call in
        the given order. The server runs consecutive read-only calls
        concurrently and every other call alone, so side effects keep the
        model's order. A call is a `BatchCall`, a `(name, arguments)` pair or a
        mapping with BatchCall's fields; calls without an id get `call-<index>`.
        """
        response = self._call(
            self._stub.DispatchBatch,
            _wire.batch_request(calls, context),
            timeout=timeout,
            typed=False,
        )
        return _wire.batch_outcomes(response)

    def approve(
        self, ticket_id: str, reason: str = "", *, remember: bool = False
    ) -> ApprovalTicket:
        """Lets the ticket's call run once (scope `admin`). `remember` also puts a
        command-running tool's exact command on the exec allowlist, so it needs
        no approval next time."""
        response = self._call(
            self._stub.Approve, _wire.approve_request(ticket_id, reason, remember), typed=False
        )
        return _wire.ticket(response)

    def deny(self, ticket_id: str, reason: str = "") -> ApprovalTicket:
        """Refuses the ticket's call (scope `admin`); `reason` reaches the requester."""
        response = self._call(self._stub.Deny, _wire.deny_request(ticket_id, reason), typed=False)
        return _wire.ticket(response)

    def watch(self) -> Iterator[RegistryEvent]:
        """See `AsyncToolwireClient.watch`. Blocks between events; closing the
        generator ends the stream."""
        return self._stream(self._stub.Watch, rpb.WatchRequest(), convert.event_from_proto)

    def watch_approvals(self) -> Iterator[ApprovalTicket]:
        """Approval tickets as they change (scope `admin`): first every pending
        one, then each new, decided, used or expired one. Blocks between
        tickets; closing the generator ends the stream."""
        return self._stream(self._stub.WatchApprovals, rpb.WatchApprovalsRequest(), _wire.ticket)

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

    def _stream(
        self, method: Callable[..., Any], request: Any, parse: Callable[[Any], _Item]
    ) -> Iterator[_Item]:
        call = method(request, metadata=self._metadata)
        try:
            for message in call:
                yield parse(message)
        except grpc.RpcError as e:
            raise error_from_rpc(e, typed=False) from e
        finally:
            call.cancel()

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
