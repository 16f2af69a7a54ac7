"""MCP servers' tools as toolwire tools.

One `McpImporter` per MCP server supervises a session with it (a stdio
subprocess or a streamable HTTP endpoint, through the `mcp` SDK's client),
turns the server's tools into toolwire tools whose handlers forward calls to
it, and hands them to a sink: `RegistrySink` registers them in the server's
own `ToolRegistry` (`[[mcp.servers]]` in `toolwire serve --config`), and
`ProviderSink` serves them to a remote registry over a `Provide` stream
(`toolwire import-mcp`).

What the importer promises:
- names are `PREFIX__TOOL`, mapped into the tool-name rule by
  `toolwire.mcp.names`; the original name stays in the labels `mcp.server`
  and `mcp.tool`, and calls are sent under it;
- collisions are never silent: two MCP tools that map to the same name, or a
  name another owner already holds in the registry, are logged as errors and
  that tool is skipped; the server's other tools are imported;
- annotations give the safety tier: `readOnlyHint` → read_only, an explicit
  `destructiveHint` (without `readOnlyHint`) → privileged, so policies and
  approvals can single such tools out; anything else → side_effecting;
- a call is forwarded with what is left of the call's timeout; `isError`
  results are HANDLER_ERROR failures with the tool's text; text content is the
  output, `structuredContent` the structured output;
- a server that dies keeps its tools registered: calls fail with
  PROVIDER_UNAVAILABLE until it is back. It is restarted with exponential
  backoff (`restart_initial_seconds` × `restart_multiplier` per failure, at
  most `restart_max_seconds`); on each (re)connection, and when the server
  says its tool list changed, the tools are listed again and reconciled (new
  ones added, changed ones replaced, gone ones removed).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

import mcp_types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from toolwire.errors import ToolNotFoundError, ToolwireError
from toolwire.models import ErrorCode, SafetyTier, ToolDefinition, ToolResult
from toolwire.policy.config import McpServerConfig, ToolwireConfig
from toolwire.policy.placement import PROVIDER
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool, ToolContext

from .names import map_names

if TYPE_CHECKING:
    from toolwire_client.aio import AsyncToolwireClient
    from toolwire_client.provider import Provider

log = logging.getLogger("toolwire.mcp.import")

LABEL_SERVER = "mcp.server"
LABEL_TOOL = "mcp.tool"


# ---- mapping MCP to toolwire -------------------------------------------------


def safety_tier(annotations: mcp_types.ToolAnnotations | None) -> SafetyTier:
    """readOnlyHint → read_only; an explicit destructiveHint → privileged; else side_effecting.

    MCP's default for an absent destructiveHint is "may be destructive"; treating
    every unannotated tool as privileged would make approvals meaningless, so only
    a server's explicit statement raises the tier."""
    if annotations is None:
        return SafetyTier.SIDE_EFFECTING
    if annotations.read_only_hint:
        return SafetyTier.READ_ONLY
    if annotations.destructive_hint:
        return SafetyTier.PRIVILEGED
    return SafetyTier.SIDE_EFFECTING


def definition_of(server: McpServerConfig, name: str, tool: mcp_types.Tool) -> ToolDefinition:
    """The toolwire definition of the MCP tool `tool`, registered as `name`."""
    description = tool.description or tool.title or ""
    if not description and tool.annotations is not None and tool.annotations.title:
        description = tool.annotations.title
    return ToolDefinition(
        name=name,
        description=description,
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        safety_tier=safety_tier(tool.annotations),
        group=server.name,
        timeout_seconds=server.timeout_seconds,
        labels={LABEL_SERVER: server.name, LABEL_TOOL: tool.name},
    )


def _content_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind} ({block.mime_type}), {len(block.data)} base64 characters]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.uri}]"
    resource = block.resource
    text = getattr(resource, "text", None)
    return text if isinstance(text, str) else f"[resource {resource.uri}]"


def result_of(result: mcp_types.CallToolResult) -> ToolResult:
    """A toolwire result from an MCP one: isError → HANDLER_ERROR with the text;
    text content joined as the output, structuredContent as structured output."""
    text = "\n".join(_content_text(block) for block in result.content)
    if result.is_error:
        return ToolResult.fail(ErrorCode.HANDLER_ERROR, text or "the MCP tool reported an error")
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    return ToolResult.ok(text, structured)


# ---- sinks -------------------------------------------------------------------


class ToolSink(Protocol):
    """Where an importer's tools go; `publish` gets the whole current set each time."""

    async def publish(self, tools: Sequence[Tool]) -> None: ...


class RegistrySink:
    """Registers imported tools in a registry, as owner `mcp:NAME`."""

    def __init__(self, registry: ToolRegistry, server_name: str) -> None:
        self.registry = registry
        self.server_name = server_name
        self.owner = f"mcp:{server_name}"
        self._published: dict[str, ToolDefinition] = {}

    async def publish(self, tools: Sequence[Tool]) -> None:
        wanted = {t.definition.name: t for t in tools}
        for name in [n for n in self._published if n not in wanted]:
            with suppress(ToolNotFoundError):
                self.registry.unregister(name, owner=self.owner)
            del self._published[name]
            log.info("MCP server '%s': tool %s is gone; unregistered it", self.server_name, name)
        for name, tool in wanted.items():
            if self._published.get(name) == tool.definition:
                continue
            holder = self.registry.owner_of(name)
            if self.registry.get(name) is not None and holder != self.owner:
                log.error(
                    "MCP server '%s': cannot import '%s' as %s: that name is already "
                    "registered by %s; the tool is skipped",
                    self.server_name, tool.definition.labels.get(LABEL_TOOL), name,
                    holder or "the server itself",
                )  # fmt: skip
                continue
            try:
                self.registry.register(tool, owner=self.owner, principal=self.owner, replace=True)
            except ToolwireError as e:
                log.error(
                    "MCP server '%s': cannot import '%s' as %s: %s; the tool is skipped",
                    self.server_name, tool.definition.labels.get(LABEL_TOOL), name, e,
                )  # fmt: skip
                continue
            self._published[name] = tool.definition

    def withdraw(self) -> None:
        """Unregister every imported tool (the import stopped)."""
        self.registry.unregister_owner(self.owner)
        self._published.clear()


class ProviderSink:
    """Serves imported tools to a remote registry over a `Provide` stream; a new
    stream replaces the old one whenever the set of tools changes."""

    def __init__(self, client: AsyncToolwireClient, server_name: str) -> None:
        self.client = client
        self.server_name = server_name
        self.provider: Provider | None = None
        self.changed = asyncio.Event()
        """Set whenever `provider` is replaced."""
        self._published: list[ToolDefinition] | None = None

    async def publish(self, tools: Sequence[Tool]) -> None:
        definitions = [t.definition for t in tools]
        unchanged = definitions == self._published
        if unchanged and self.provider is not None and not self.provider.closed:
            return
        await self.close()
        taken = {d.name for d in await self.client.list()}
        keep: list[Tool] = []
        for tool in tools:
            if tool.definition.name in taken:
                log.error(
                    "MCP server '%s': cannot import '%s' as %s: that name is already "
                    "registered on the server; the tool is skipped",
                    self.server_name, tool.definition.labels.get(LABEL_TOOL), tool.definition.name,
                )  # fmt: skip
            else:
                keep.append(tool)
        provider = self.client.provide(keep, name=f"mcp:{self.server_name}")
        await provider.start()
        self.provider = provider
        self._published = definitions
        self.changed.set()
        log.info(
            "MCP server '%s': serving %d tool(s) as provider %s",
            self.server_name, len(keep), provider.provider_id,
        )  # fmt: skip

    async def close(self) -> None:
        provider, self.provider = self.provider, None
        if provider is not None:
            await provider.close()


# ---- the supervisor ----------------------------------------------------------


class _ConnectionLost(Exception):
    pass


def _is_list_changed(message: object) -> bool:
    return getattr(message, "method", None) == "notifications/tools/list_changed"


class McpImporter:
    """Keeps one MCP server's tools imported into a sink; `run()` until cancelled."""

    def __init__(self, server: McpServerConfig, sink: ToolSink) -> None:
        self.server = server
        self.sink = sink
        self._client: Client | None = None
        self._tools: dict[str, Tool] = {}
        """The imported tools by toolwire name; kept while the server is down."""
        self._last_error = ""
        self._lost = asyncio.Event()
        self._relist = asyncio.Event()
        self.connected = asyncio.Event()
        """Set while a session with the server is up."""
        self.generation = 0
        """How many times a session has been established."""
        self.attempts = 0
        """How many times a session has been tried."""

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def _open(self) -> Client:
        server = self.server

        async def on_message(message: object) -> None:
            if _is_list_changed(message):
                self._relist.set()

        target: StdioServerParameters | str
        if server.command is not None:
            target = StdioServerParameters(
                command=server.command[0],
                args=list(server.command[1:]),
                env=dict(server.env) or None,
                cwd=server.cwd,
            )
        else:
            assert server.url is not None
            target = server.url
        return Client(
            target,
            read_timeout_seconds=server.timeout_seconds,
            message_handler=on_message,
            cache=None,
        )

    async def run(self) -> None:
        server = self.server
        delay = server.restart_initial_seconds
        while True:
            self.attempts += 1
            try:
                async with self._open() as client:
                    self._lost.clear()
                    await self._reconcile(client)
                    self._client = client
                    self.generation += 1
                    self.connected.set()
                    delay = server.restart_initial_seconds
                    log.info(
                        "MCP server '%s' is up with %d tool(s): %s",
                        server.name, len(self._tools), ", ".join(self._tools) or "none",
                    )  # fmt: skip
                    await self._watch(client)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a dead or broken server: restart it
                self._last_error = _describe(e)
            finally:
                self._client = None
                self.connected.clear()
            log.warning(
                "MCP server '%s' is unavailable (%s); its tools fail with provider_unavailable; "
                "restarting in %.3g s",
                server.name, self._last_error or "it stopped", delay,
            )  # fmt: skip
            await asyncio.sleep(delay)
            delay = min(delay * server.restart_multiplier, server.restart_max_seconds)

    async def _watch(self, client: Client) -> None:
        """Returns (raising) when the session is gone; relists on list_changed."""
        interval = self.server.ping_interval_seconds
        while True:
            lost = asyncio.ensure_future(self._lost.wait())
            relist = asyncio.ensure_future(self._relist.wait())
            try:
                await asyncio.wait({lost, relist}, timeout=interval)
            finally:
                lost.cancel()
                relist.cancel()
            if self._lost.is_set():
                raise _ConnectionLost("the connection closed")
            if self._relist.is_set():
                self._relist.clear()
                await self._reconcile(client)
                continue
            try:
                await client.send_ping()
            except MCPError as e:
                # any answer, even "method not found" (pings are gone from newer
                # protocol versions), shows the server is alive
                if e.code in (mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT):
                    raise

    async def _list(self, client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(1000):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _reconcile(self, client: Client) -> None:
        listed = await self._list(client)
        by_name = {t.name: t for t in listed}
        names = map_names(self.server.name, by_name)
        for collision in names.collisions:
            log.error("%s", collision.describe(self.server.name))
        tools: dict[str, Tool] = {}
        for name, mcp_name in names.to_mcp.items():
            try:
                definition = definition_of(self.server, name, by_name[mcp_name])
            except ValueError as e:
                log.error(
                    "MCP server '%s': tool '%s' has a definition toolwire cannot use (%s); "
                    "the tool is skipped",
                    self.server.name, mcp_name, e,
                )  # fmt: skip
                continue
            tools[name] = Tool(definition, self._handler(mcp_name), sandboxing=PROVIDER)
        self._tools = tools
        await self.sink.publish(list(tools.values()))

    def _handler(self, mcp_name: str) -> Any:
        async def forward(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            return await self.call(mcp_name, arguments, context.remaining())

        return forward

    def _unavailable(self, mcp_name: str) -> ToolResult:
        why = f": {self._last_error}" if self._last_error else ""
        return ToolResult.fail(
            ErrorCode.PROVIDER_UNAVAILABLE,
            f"the MCP server '{self.server.name}' that serves '{mcp_name}' is not "
            f"running{why}; it is being restarted, try again later",
        )

    async def call(self, mcp_name: str, arguments: Mapping[str, Any], timeout: float) -> ToolResult:
        """Forward one call under its MCP name; never raises."""
        client = self._client
        if client is None:
            return self._unavailable(mcp_name)
        try:
            result = await client.call_tool(
                mcp_name, dict(arguments), read_timeout_seconds=max(timeout, 0.001)
            )
        except MCPError as e:
            if e.code == mcp_types.CONNECTION_CLOSED:
                self._last_error = "the connection closed"
                self._lost.set()
                return self._unavailable(mcp_name)
            if e.code == mcp_types.REQUEST_TIMEOUT:
                return ToolResult.fail(
                    ErrorCode.TIMEOUT,
                    f"the MCP server '{self.server.name}' did not answer '{mcp_name}' in time",
                )
            return ToolResult.fail(
                ErrorCode.HANDLER_ERROR,
                f"the MCP server '{self.server.name}' refused '{mcp_name}': {e.error.message}",
            )
        except (OSError, EOFError) as e:
            self._last_error = _describe(e)
            self._lost.set()
            return self._unavailable(mcp_name)
        except Exception as e:
            if type(e).__module__.startswith("anyio"):  # a closed or broken stream
                self._last_error = _describe(e)
                self._lost.set()
                return self._unavailable(mcp_name)
            return ToolResult.fail(
                ErrorCode.HANDLER_ERROR,
                f"calling '{mcp_name}' on the MCP server '{self.server.name}' failed: "
                f"{_describe(e)}",
            )
        return result_of(result)


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _describe(error.exceptions[0])
    if isinstance(error, MCPError):
        return error.error.message
    return str(error) or type(error).__name__


# ---- toolwire serve: the configured imports ----------------------------------


class _HasRegistry(Protocol):
    @property
    def registry(self) -> ToolRegistry: ...


async def import_configured(servers: _HasRegistry, config: ToolwireConfig) -> None:
    """`toolwire serve`'s companion: import every `[[mcp.servers]]` into the
    server's registry until cancelled (at shutdown)."""
    sinks = [RegistrySink(servers.registry, s.name) for s in config.mcp.servers]
    importers = [McpImporter(s, sink) for s, sink in zip(config.mcp.servers, sinks, strict=True)]
    try:
        await asyncio.gather(*(i.run() for i in importers))
    finally:
        for sink in sinks:
            sink.withdraw()


__all__ = [
    "LABEL_SERVER",
    "LABEL_TOOL",
    "McpImporter",
    "ProviderSink",
    "RegistrySink",
    "ToolSink",
    "definition_of",
    "import_configured",
    "result_of",
    "safety_tier",
]
