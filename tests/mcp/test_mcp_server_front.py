"""The MCP front over an in-memory `Registry` (no processes): result mapping,
approval messages, tickets from `_meta`, structured output only for tools
that declare an output schema, and list changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError
from toolwire.mcp.server import TICKET_META_KEY, McpFront, error_text
from toolwire.models import (
    ApprovalTicket,
    ErrorCode,
    SafetyTier,
    ToolDefinition,
    ToolResult,
)

pytestmark = pytest.mark.timeout(60)

OBJECT = {"type": "object", "properties": {"n": {"type": "integer"}}}
TICKET = ApprovalTicket(
    ticket_id="t-123",
    tool_name="wipe",
    arguments_json="{}",
    summary="wipe everything",
    requested_by="mcp",
    reason="privileged tools need a person's approval",
)


class FakeRegistry:
    def __init__(self) -> None:
        self.definitions = [
            ToolDefinition(name="counted", input_schema=OBJECT, output_schema=OBJECT),
            ToolDefinition(name="plain", input_schema=OBJECT),
            ToolDefinition(name="wipe", safety_tier=SafetyTier.PRIVILEGED),
        ]
        self.tickets: list[str] = []
        self.changed: asyncio.Queue[None] = asyncio.Queue()

    async def list_tools(self) -> list[ToolDefinition]:
        return list(self.definitions)

    async def dispatch(
        self, name: str, arguments: Mapping[str, Any], *, ticket: str = ""
    ) -> ToolResult:
        self.tickets.append(ticket)
        if name in ("counted", "plain"):
            return ToolResult.ok('{"n": 1}', {"n": 1})
        if name == "wipe" and not ticket:
            return ToolResult(
                success=False,
                error="approval required",
                error_code=ErrorCode.APPROVAL_REQUIRED,
                approval=TICKET,
            )
        if name == "wipe":
            return ToolResult.ok("wiped")
        return ToolResult.fail(ErrorCode.NOT_FOUND, f"no tool named '{name}'")

    async def changes(self) -> AsyncIterator[None]:
        while True:
            yield await self.changed.get()


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_error_text_says_the_code_and_how_to_approve() -> None:
    failed = ToolResult(
        success=False, error="needs approval", error_code=ErrorCode.APPROVAL_REQUIRED,
        approval=TICKET,
    )  # fmt: skip
    text = error_text("wipe", failed)
    assert text.startswith("approval_required: needs approval")
    assert "toolwire approvals approve t-123" in text
    assert TICKET_META_KEY in text
    denied = ToolResult(
        success=False, error="no", error_code=ErrorCode.DENIED_BY_POLICY, policy_rule="r1"
    )
    assert error_text("x", denied) == "denied_by_policy: no (policy rule: r1)"


async def test_front_over_memory_streams() -> None:
    import anyio

    registry = FakeRegistry()
    front = McpFront(registry)
    to_server_send, to_server_read = anyio.create_memory_object_stream[Any](16)
    to_client_send, to_client_read = anyio.create_memory_object_stream[Any](16)
    changed = asyncio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            front.server.run, to_server_read, to_client_send, front.initialization_options()
        )
        tg.start_soon(front.notify_changes)
        async with ClientSession(to_client_read, to_server_send, message_handler=on_message) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["counted"].output_schema == OBJECT
            assert tools["plain"].output_schema is None
            assert tools["wipe"].annotations is not None
            assert tools["wipe"].annotations.destructive_hint is True

            counted = await s.call_tool("counted", {"n": 1})
            assert counted.structured_content == {"n": 1}
            plain = await s.call_tool("plain", {"n": 1})
            assert plain.structured_content is None and text_of(plain) == '{"n": 1}'

            pending = await s.call_tool("wipe", {})
            assert pending.is_error is True and "t-123" in text_of(pending)
            approved = await s.call_tool("wipe", {}, meta={TICKET_META_KEY: "t-123"})
            assert approved.is_error is not True and text_of(approved) == "wiped"
            assert registry.tickets[-1] == "t-123"

            with pytest.raises(MCPError) as raised:
                await s.call_tool("gone", {})
            assert raised.value.code == types.INVALID_PARAMS

            registry.changed.put_nowait(None)
            await asyncio.wait_for(changed.wait(), 10)
        tg.cancel_scope.cancel()
