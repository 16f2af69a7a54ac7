"""toolwire as an MCP server: the registry's tools for every MCP client.

The MCP layer is written once, over `Registry`, a small port with two
implementations: `LocalRegistry` (a `ToolRegistry` in this process, called as
one principal) and `RemoteRegistry` (a running toolwire server, through
`AsyncToolwireClient`). Either way a `tools/call` is a registry dispatch, so
validation, policy, approvals, timeouts, truncation and audit all apply.

- `tools/list`: the definitions in the MCP format (`formats.mcp`): input and
  output schemas, annotations from the safety tier.
- `tools/call`: a failed result is an `isError` result whose text says the
  error code and message (for `approval_required`: the ticket and how to
  approve it); an unknown tool or malformed arguments are JSON-RPC errors.
  A call may carry an approved ticket in `_meta["toolwire/ticket"]`.
- Registry changes send `notifications/tools/list_changed` to every session
  (and, on the 2026-07-28 protocol, to `subscriptions/listen` streams).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from toolwire_client.aio import AsyncToolwireClient

from toolwire.auth import Principal
from toolwire.events import EventKind, RegistryEvent, watch_events
from toolwire.formats import to_model_tools
from toolwire.models import CallContext, ErrorCode, ModelFormat, ToolDefinition, ToolResult
from toolwire.registry import ToolRegistry

log = logging.getLogger("toolwire.mcp")

SERVER_NAME = "toolwire"
TICKET_META_KEY = "toolwire/ticket"
"""`_meta` key of a `tools/call` that carries an approved approval ticket."""
WATCH_RETRY_SECONDS = 1.0


class Registry(Protocol):
    """What the MCP front needs of a registry."""

    async def list_tools(self) -> list[ToolDefinition]:
        """The tools the caller may see, sorted by name."""
        ...

    async def dispatch(
        self, name: str, arguments: Mapping[str, Any], *, ticket: str = ""
    ) -> ToolResult:
        """One call through the registry's dispatch; failures are results."""
        ...

    def changes(self) -> AsyncIterator[None]:
        """One item per change of the tool list, from now on (never the initial state)."""
        ...


class LocalRegistry:
    """A `ToolRegistry` in this process, called as `principal` with `context`."""

    def __init__(self, registry: ToolRegistry, principal: Principal, context: CallContext) -> None:
        self.registry = registry
        self.principal = principal
        self.context = context

    async def list_tools(self) -> list[ToolDefinition]:
        return self.registry.list_page(principal=self.principal).tools

    async def dispatch(
        self, name: str, arguments: Mapping[str, Any], *, ticket: str = ""
    ) -> ToolResult:
        return await self.registry.dispatch(
            name, arguments, self.context, principal=self.principal, ticket=ticket
        )

    async def changes(self) -> AsyncIterator[None]:
        async for event in watch_events(self.registry):
            if _is_change(event):
                yield None


class RemoteRegistry:
    """A running toolwire server, through its client (which carries the token)."""

    def __init__(self, client: AsyncToolwireClient, context: CallContext) -> None:
        self.client = client
        self.context = context

    async def list_tools(self) -> list[ToolDefinition]:
        return await self.client.list()

    async def dispatch(
        self, name: str, arguments: Mapping[str, Any], *, ticket: str = ""
    ) -> ToolResult:
        return await self.client.dispatch(
            name, dict(arguments), context=self.context, approval_ticket=ticket
        )

    async def changes(self) -> AsyncIterator[None]:
        """Changes from the server's Watch stream; if the stream breaks, it is
        opened again, and the reconnect counts as a change (some may be missed)."""
        first = True
        while True:
            try:
                async for event in self.client.watch():
                    if event.kind is EventKind.SYNCED:
                        if not first:
                            yield None
                        first = False
                    elif _is_change(event):
                        yield None
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the stream broke: the server restarted or went away
                log.warning("watching the toolwire server failed (%s); retrying", e)
            await asyncio.sleep(WATCH_RETRY_SECONDS)


def _is_change(event: RegistryEvent) -> bool:
    return event.kind in (EventKind.TOOL_ADDED, EventKind.TOOL_REMOVED)


def mcp_tools(definitions: list[ToolDefinition]) -> list[types.Tool]:
    """The definitions as MCP tools, through the one MCP converter."""
    converted = to_model_tools(definitions, ModelFormat.MCP)
    for d in converted.diagnostics:
        log.debug("tools/list: %s%s: %s", d.tool_name, d.path, d.message)
    return [types.Tool.model_validate(t) for t in converted.tools]


def error_text(name: str, result: ToolResult) -> str:
    """What an MCP client (and its model) reads when a call failed."""
    code = result.error_code.value if result.error_code is not None else "error"
    text = f"{code}: {result.error}"
    if result.policy_rule:
        text += f" (policy rule: {result.policy_rule})"
    ticket = result.approval
    if result.error_code is ErrorCode.APPROVAL_REQUIRED and ticket is not None:
        text += (
            f"\nticket {ticket.ticket_id}: {ticket.summary}"
            f"\napprove it with: toolwire approvals approve {ticket.ticket_id}"
            " (--remember to allow calls like it from now on)"
            f'\nthen call {name} again with the same arguments and _meta {{"{TICKET_META_KEY}": '
            f'"{ticket.ticket_id}"}}'
        )
    return text


class _ListChangingServer(Server[Any]):
    """Declares `tools.listChanged` on every transport (streamable HTTP builds
    its initialization options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


@dataclass(frozen=True, slots=True)
class _Listing:
    structured: frozenset[str]
    """The tools whose MCP form declares an output schema."""


class McpFront:
    """The MCP server over one `Registry`; serve it with `serve_stdio` or `serve_http`."""

    def __init__(self, registry: Registry, *, version: str = "") -> None:
        self.registry = registry
        self._listing: _Listing | None = None
        self._sessions: dict[int, ServerSession] = {}
        """One session per open connection: the one its notifications go through."""
        self._bus = InMemorySubscriptionBus()
        self.server: Server[Any] = _ListChangingServer(
            SERVER_NAME,
            version=version,
            instructions="toolwire's tools: each call is validated, policed and audited.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options()

    async def _list(self) -> list[types.Tool]:
        tools = mcp_tools(await self.registry.list_tools())
        self._listing = _Listing(frozenset(t.name for t in tools if t.output_schema is not None))
        return tools

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx.session)
        return types.ListToolsResult(tools=await self._list())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx.session)
        value = (params.meta or {}).get(TICKET_META_KEY, "")
        ticket = value if isinstance(value, str) else ""
        result = await self.registry.dispatch(params.name, params.arguments or {}, ticket=ticket)
        if result.error_code is ErrorCode.NOT_FOUND:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {result.error}")
        if not result.success:
            return types.CallToolResult(
                content=[types.TextContent(text=error_text(params.name, result))], is_error=True
            )
        structured = None
        if isinstance(result.structured_output, dict) and await self._declares_output(params.name):
            structured = result.structured_output
        text = result.output
        if not text and structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=structured
        )

    def _remember(self, session: ServerSession) -> None:
        """Keep a session of the request's connection, until the connection
        closes, to send it list changes. A `ServerSession` lives for one request
        but notifies through its connection's channel; the SDK exposes the
        connection only on the session, privately."""
        connection = session._connection
        key = id(connection)
        if key not in self._sessions:
            self._sessions[key] = session
            connection.exit_stack.callback(self._sessions.pop, key, None)

    async def _declares_output(self, name: str) -> bool:
        if self._listing is None:
            await self._list()
        assert self._listing is not None
        return name in self._listing.structured

    async def notify_changes(self) -> None:
        """Until cancelled: every change of the registry's tool list becomes a
        `notifications/tools/list_changed` to the sessions that know the list."""
        async for _ in self.registry.changes():
            self._listing = None
            await self._bus.publish(ToolsListChanged())
            for key, session in list(self._sessions.items()):
                try:
                    await session.send_tool_list_changed()
                except Exception as e:  # a connection that ended
                    log.debug("list_changed not delivered: %s", e)
                    self._sessions.pop(key, None)


async def serve_stdio(front: McpFront, stdin: Any = None, stdout: Any = None) -> None:
    """One MCP session over stdio (the process's, or the given async text
    files) until the client closes it; registry changes are sent meanwhile."""
    from mcp.server.stdio import stdio_server

    async with _notifying(front), stdio_server(stdin, stdout) as (read, write):
        await front.server.run(read, write, front.initialization_options())


async def serve_http(
    front: McpFront,
    host: str,
    port: int,
    *,
    on_bound: Callable[[str], Awaitable[None] | None] | None = None,
) -> None:
    """MCP over streamable HTTP at http://HOST:PORT/mcp until cancelled;
    `on_bound` gets the URL once the port is bound (port 0: any free port)."""
    app = front.server.streamable_http_app(host=host)
    server = _QuietUvicorn(
        uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    )
    async with _notifying(front):
        serving = asyncio.ensure_future(server.serve())
        try:
            while not server.started:
                if serving.done():
                    serving.result()  # the bind failed: raise its error
                    raise OSError(f"the MCP HTTP listener on {host}:{port} stopped")
                await asyncio.sleep(0.01)
            bound = server.servers[0].sockets[0].getsockname()
            url = f"http://{_url_host(host)}:{bound[1]}/mcp"
            log.debug("toolwire MCP (streamable HTTP) on %s", url)
            if on_bound is not None:
                maybe = on_bound(url)
                if maybe is not None:
                    await maybe
            await asyncio.shield(serving)  # cancelling us asks uvicorn to exit (below)
        finally:
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(serving)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@contextlib.asynccontextmanager
async def _notifying(front: McpFront) -> AsyncIterator[None]:
    task = asyncio.ensure_future(front.notify_changes())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class _QuietUvicorn(uvicorn.Server):
    """uvicorn that leaves signals to toolwire's server, which stops it by cancelling."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
