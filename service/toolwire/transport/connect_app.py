"""RegistryService over gRPC-web and Connect (connectrpc, ASGI): the listener
that code running in the sandbox reaches, and browsers.

The same `RegistryHandlers` as the grpc.aio servicer, so the same scopes,
policies and dispatch; what differs is the transport, and one rule: this
listener never serves an anonymous caller, even on a development server
without tokens. Code in the sandbox can reach only this listener, so it cannot
drop its run token to get out of its grant.

Two small ASGI layers sit around connectrpc's application:
- `GrpcWebTrailerFrames` turns a trailers-only gRPC-web error (status in the
  HTTP headers, empty body) into headers plus a trailer frame carrying
  `grpc-status`; Connect-ES mis-reads trailers-only responses;
- `Cors`, when origins are configured, answers preflight requests and exposes
  the gRPC status headers to browser callers.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from typing import Any, TypeVar

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from toolwire.auth import Principal
from toolwire.convert import ConversionError
from toolwire.errors import ToolwireError
from toolwire.paging import PageTokenError
from toolwire.transport.handlers import RegistryHandlers
from toolwire.transport.status import connect_error
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1.registry_service_connect import RegistryService, RegistryServiceASGIApplication

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_Context = RequestContext[Any, Any]
_Errors = (ToolwireError, ConversionError, PageTokenError)
T = TypeVar("T")


def _remaining_seconds(ctx: _Context) -> float | None:
    """The caller's deadline (grpc-timeout or connect-timeout-ms), if it sent one."""
    remaining_ms = ctx.timeout_ms
    return None if remaining_ms is None else max(0.0, remaining_ms / 1000)


class HttpRegistryService(RegistryService):
    """connectrpc's side of `RegistryHandlers`: headers in, ConnectErrors out."""

    def __init__(self, handlers: RegistryHandlers) -> None:
        self._handlers = handlers

    def _caller(self, method: str, ctx: _Context) -> Principal:
        try:
            return self._handlers.authorize(method, ctx.request_headers.get("authorization"))
        except ToolwireError as e:
            raise connect_error(e) from e

    async def _unary(
        self, method: str, ctx: _Context, work: Callable[[Principal], Awaitable[T] | T]
    ) -> T:
        caller = self._caller(method, ctx)
        try:
            outcome = work(caller)
            return await outcome if inspect.isawaitable(outcome) else outcome
        except _Errors as e:
            raise connect_error(e) from e

    async def _stream(
        self, method: str, ctx: _Context, work: Callable[[Principal], AsyncIterator[T]]
    ) -> AsyncIterator[T]:
        caller = self._caller(method, ctx)
        try:
            async for item in work(caller):
                yield item
        except _Errors as e:
            raise connect_error(e) from e

    async def register(
        self, request: rpb.RegisterRequest, ctx: _Context, /
    ) -> rpb.RegisterResponse:
        return await self._unary(
            "Register", ctx, lambda caller: self._handlers.register(caller, request)
        )

    async def unregister(
        self, request: rpb.UnregisterRequest, ctx: _Context, /
    ) -> rpb.UnregisterResponse:
        return await self._unary(
            "Unregister", ctx, lambda caller: self._handlers.unregister(caller, request)
        )

    async def list(self, request: rpb.ListRequest, ctx: _Context, /) -> rpb.ListResponse:
        return await self._unary(
            "List", ctx, lambda caller: self._handlers.list_tools(caller, request)
        )

    def watch(
        self, request: rpb.WatchRequest, ctx: _Context, /
    ) -> AsyncIterator[rpb.WatchResponse]:
        return self._stream("Watch", ctx, self._handlers.watch)

    async def dispatch(
        self, request: rpb.DispatchRequest, ctx: _Context, /
    ) -> rpb.DispatchResponse:
        return await self._unary(
            "Dispatch",
            ctx,
            lambda caller: self._handlers.dispatch(caller, request, _remaining_seconds(ctx)),
        )

    async def dispatch_batch(
        self, request: rpb.DispatchBatchRequest, ctx: _Context, /
    ) -> rpb.DispatchBatchResponse:
        return await self._unary(
            "DispatchBatch",
            ctx,
            lambda caller: self._handlers.dispatch_batch(caller, request, _remaining_seconds(ctx)),
        )

    async def generate_stubs(
        self, request: rpb.GenerateStubsRequest, ctx: _Context, /
    ) -> rpb.GenerateStubsResponse:
        return await self._unary(
            "GenerateStubs", ctx, lambda caller: self._handlers.generate_stubs(caller, request)
        )

    async def to_model_tools(
        self, request: rpb.ToModelToolsRequest, ctx: _Context, /
    ) -> rpb.ToModelToolsResponse:
        return await self._unary(
            "ToModelTools", ctx, lambda caller: self._handlers.to_model_tools(caller, request)
        )

    async def approve(self, request: rpb.ApproveRequest, ctx: _Context, /) -> rpb.ApproveResponse:
        return await self._unary(
            "Approve", ctx, lambda caller: self._handlers.approve(caller, request)
        )

    async def deny(self, request: rpb.DenyRequest, ctx: _Context, /) -> rpb.DenyResponse:
        return await self._unary("Deny", ctx, lambda caller: self._handlers.deny(caller, request))

    async def watch_approvals(
        self, request: rpb.WatchApprovalsRequest, ctx: _Context, /
    ) -> AsyncIterator[rpb.WatchApprovalsResponse]:
        async for ticket in self._stream(
            "WatchApprovals", ctx, lambda _: self._handlers.watch_approvals()
        ):
            yield ticket

    async def provide(
        self, request: AsyncIterator[rpb.ProvideRequest], ctx: RequestContext[Any, Any], /
    ) -> AsyncIterator[rpb.ProvideResponse]:
        try:
            self._handlers.authenticate(ctx.request_headers.get("authorization"))
        except ToolwireError as e:
            raise connect_error(e) from e
        raise ConnectError(
            Code.UNIMPLEMENTED,
            "providers connect over the gRPC listener: Provide is a bidirectional "
            "stream, which needs HTTP/2",
        )
        yield  # an async generator, as connectrpc expects of a bidi handler


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


_STATUS_HEADERS = frozenset({b"grpc-status", b"grpc-message", b"grpc-status-details-bin"})
_TRAILER_FLAG = 0x80


def trailer_frame(trailers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A gRPC-web trailer frame: flag 0x80, big-endian length, HTTP/1 header lines."""
    data = b"".join(key.lower() + b": " + value + b"\r\n" for key, value in trailers)
    return struct.pack(">BI", _TRAILER_FLAG, len(data)) + data


class GrpcWebTrailerFrames:
    """Every gRPC-web response ends with a trailer frame that carries grpc-status.

    connectrpc answers some gRPC-web errors (those raised before it starts a
    response stream, e.g. a malformed grpc-timeout) trailers-only: the status in
    the HTTP headers and an empty body. Connect-ES mis-reads those, so the
    status headers move into a trailer frame at the end of the body. Native
    gRPC (application/grpc) needs HTTP/2 trailers, which this HTTP/1.1 listener
    cannot send: it is refused with a plain 415 that names the right listener.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        content_type = (_header(scope, b"content-type") or b"").lower()
        if not content_type.startswith(b"application/grpc"):
            await self._app(scope, receive, send)
            return
        if not content_type.startswith(b"application/grpc-web"):
            await _plain_response(
                send, 415, b"native gRPC is served on toolwire's gRPC listener; "
                b"this one speaks gRPC-web and Connect\n",
            )  # fmt: skip
            return
        held: list[tuple[bytes, bytes]] | None = None

        async def framed(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", ())]
                status = [(k, v) for k, v in headers if k.lower() in _STATUS_HEADERS]
                if status:
                    held = status
                    kept = [
                        (k, v)
                        for k, v in headers
                        if k.lower() not in _STATUS_HEADERS and k.lower() != b"content-length"
                    ]
                    message = {**message, "headers": kept}
            elif (
                message["type"] == "http.response.body"
                and held is not None
                and not message.get("more_body", False)
            ):
                message = {**message, "body": message.get("body", b"") + trailer_frame(held)}
                held = None
            await send(message)

        await self._app(scope, receive, framed)


async def _plain_response(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


# What Connect-ES's `cors` constants list for its protocols, plus the bearer token.
CORS_ALLOWED_METHODS = b"GET, POST"
CORS_ALLOWED_HEADERS = (
    b"authorization, content-type, connect-protocol-version, connect-timeout-ms, "
    b"connect-content-encoding, connect-accept-encoding, content-encoding, accept-encoding, "
    b"grpc-message-type, x-grpc-web, x-user-agent, grpc-timeout"
)
CORS_EXPOSED_HEADERS = (
    b"grpc-status, grpc-message, grpc-status-details-bin, content-encoding, "
    b"connect-content-encoding"
)
CORS_MAX_AGE = b"7200"


class Cors:
    """CORS for browser callers from the configured origins ("*": any origin).

    Preflight requests from an allowed origin get 204 with the methods and
    headers the Connect and gRPC-web protocols use; from any other origin, 403.
    Responses to allowed origins expose the gRPC status headers. No
    credentials mode: the token is a header, not a cookie.
    """

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self._app = app
        self._origins = frozenset(o.rstrip("/") for o in origins)
        self._any = "*" in self._origins

    def allows(self, origin: str) -> bool:
        return self._any or origin in self._origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin") if scope["type"] == "http" else None
        if origin is None:
            await self._app(scope, receive, send)
            return
        preflight = (
            scope["method"] == "OPTIONS"
            and _header(scope, b"access-control-request-method") is not None
        )
        allowed = self.allows(origin.decode("latin-1"))
        if preflight:
            await self._preflight(send, origin if allowed else None)
            return
        if not allowed:
            await self._app(scope, receive, send)
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", ()) if bytes(k).lower() != b"vary"
                ]
                headers += [
                    (b"access-control-allow-origin", origin),
                    (b"access-control-expose-headers", CORS_EXPOSED_HEADERS),
                    (b"vary", b"origin"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, with_cors)

    async def _preflight(self, send: Send, origin: bytes | None) -> None:
        vary = (b"vary", b"origin, access-control-request-method, access-control-request-headers")
        if origin is None:
            headers = [vary, (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        headers = [
            (b"access-control-allow-origin", origin),
            (b"access-control-allow-methods", CORS_ALLOWED_METHODS),
            (b"access-control-allow-headers", CORS_ALLOWED_HEADERS),
            (b"access-control-max-age", CORS_MAX_AGE),
            vary,
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(
    handlers: RegistryHandlers,
    *,
    max_message_bytes: int,
    cors_origins: Iterable[str] = (),
) -> ASGIApp:
    """The ASGI application of the HTTP listener: gRPC-web and Connect (binary
    and JSON codecs over the same google.protobuf messages), a token required
    on every call, requests above `max_message_bytes` refused."""
    connect_app = RegistryServiceASGIApplication(
        HttpRegistryService(handlers),
        read_max_bytes=max_message_bytes,
        codecs=google_protobuf_codecs(),
    )
    app: ASGIApp = GrpcWebTrailerFrames(connect_app)
    origins = tuple(cors_origins)
    if origins:
        app = Cors(app, origins)
    return app
