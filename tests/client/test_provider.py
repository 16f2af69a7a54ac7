"""The provider's side of the Provide stream, against the scripted test double
of the server (conftest): the hello, concurrent calls answered in completion
order, cancellation, late registration, and a registry that goes away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from toolwire import convert
from toolwire.models import ErrorCode
from toolwire.tools import Tool, ToolContext
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire_client import (
    AsyncToolwireClient,
    DuplicateToolError,
    ToolDefinition,
    ToolwireRpcError,
    serve_tools,
)

WAIT = 5.0

TEXT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


@dataclass
class Tools:
    """Tools whose progress a test can watch and steer."""

    release_slow: asyncio.Event = field(default_factory=asyncio.Event)
    stuck_started: asyncio.Event = field(default_factory=asyncio.Event)
    stuck_cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    async def slow(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        await self.release_slow.wait()
        return "slow done"

    async def echo(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        return {"echo": arguments["text"], "caller": context.call.caller_id}

    async def stuck(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.stuck_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stuck_cancelled.set()
            raise
        return "never"

    def all(self) -> list[Tool]:
        return [
            Tool.of(ToolDefinition(name="slow"), self.slow),
            Tool.of(ToolDefinition(name="echo", input_schema=TEXT_SCHEMA), self.echo),
            Tool.of(ToolDefinition(name="stuck"), self.stuck),
        ]


def shout(text: str) -> str:
    """Shouts the text back."""
    return text.upper()


def leftover_tasks() -> list[asyncio.Task[Any]]:
    """The provider's tasks that are still running (their names start with toolwire-)."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("toolwire-") and not t.done()]


async def wait(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), WAIT)


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
async def client(running_fake: Any) -> AsyncIterator[AsyncToolwireClient]:
    async with AsyncToolwireClient(running_fake.target, timeout=WAIT) as client:
        yield client


async def test_hello_announces_the_tools_and_the_stored_definitions_come_back(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all(), name="test-provider") as provider:
        hello = await fake.next_hello()

        assert hello.provider_name == "test-provider"
        assert [t.name for t in hello.tools] == ["slow", "echo", "stuck"]
        echo = convert.definition_from_proto(hello.tools[1])
        assert echo.input_schema == TEXT_SCHEMA
        assert [p.name for p in echo.parameters] == ["text"]  # normalized by the core
        assert provider.provider_id == "prov-1"
        assert [d.name for d in provider.definitions] == ["slow", "echo", "stuck"]
        assert all(d.labels == {"stored": "1"} for d in provider.definitions)

    assert await fake.provider_half_closed()
    await wait(fake.provide_ended)
    assert leftover_tasks() == []


async def test_concurrent_calls_are_answered_in_completion_order(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()):
        fake.send_call("c1", "slow")
        fake.send_call("c2", "echo", '{"text": "hi"}')

        first_id, first = await fake.next_result()
        tools.release_slow.set()
        second_id, second = await fake.next_result()

    assert first_id == "c2"
    assert first.success
    assert first.structured_output == {"echo": "hi", "caller": "agent-1"}
    assert second_id == "c1"
    assert (second.success, second.output) == (True, "slow done")
    assert await fake.provider_half_closed()


async def test_a_cancelled_call_is_stopped_and_gets_no_outcome(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()):
        fake.send_call("c3", "stuck")
        await wait(tools.stuck_started)
        fake.send_cancel("c3")
        await wait(tools.stuck_cancelled)
        fake.send_call("c4", "echo", '{"text": "after"}')

        call_id, result = await fake.next_result()

    assert call_id == "c4"
    assert result.success
    assert await fake.provider_half_closed()  # and nothing for c3 came before the close
    assert leftover_tasks() == []


async def test_calls_go_through_the_cores_validation_and_timeouts(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()):
        fake.send_call("bad", "echo", '{"text": 5}')
        bad_id, bad = await fake.next_result()
        fake.send_call("late", "stuck", timeout=0.05)
        late_id, late = await fake.next_result()
        fake.send_call("none", "nope")
        none_id, none = await fake.next_result()

    assert (bad_id, bad.error_code) == ("bad", ErrorCode.INVALID_ARGUMENTS)
    assert (late_id, late.error_code) == ("late", ErrorCode.TIMEOUT)
    assert tools.stuck_cancelled.is_set()
    assert (none_id, none.error_code) == ("none", ErrorCode.NOT_FOUND)


async def test_plain_functions_become_tools(fake: Any, client: AsyncToolwireClient) -> None:
    async with client.provide([shout]):
        hello = await fake.next_hello()
        fake.send_call("s1", "shout", '{"text": "hi"}')
        _, result = await fake.next_result()

    assert [t.name for t in hello.tools] == ["shout"]
    assert hello.tools[0].description == "Shouts the text back."
    assert result.output == "HI"


async def test_a_rejected_hello_raises_the_mapped_error_from_enter(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    fake.reject_hello(
        grpc.StatusCode.ALREADY_EXISTS,
        "tool 'echo' already exists",
        "DUPLICATE_TOOL",
        {"name": "echo", "suggestion": "echo_2"},
    )

    with pytest.raises(DuplicateToolError) as raised:
        async with client.provide(tools.all()):
            pytest.fail("the provider should not have started")

    assert (raised.value.name, raised.value.suggestion) == ("echo", "echo_2")
    assert leftover_tasks() == []


async def test_tools_that_cannot_be_registered_fail_before_connecting(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    with pytest.raises(DuplicateToolError):
        async with client.provide([*tools.all(), *tools.all()]):
            pytest.fail("the provider should not have started")

    assert fake.hello_count() == 0


async def test_register_adds_a_tool_under_the_providers_id(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()) as provider:
        stored = ToolDefinition(name="shout", description="stored")
        fake.answer(
            "Register", rpb.RegisterResponse(definition=convert.definition_to_proto(stored))
        )

        definition = await provider.register(shout)
        call = await fake.next_unary()
        fake.send_call("s1", "shout", '{"text": "late"}')
        _, result = await fake.next_result()

    assert call.request.provider_id == "prov-1"
    assert call.request.definition.name == "shout"
    assert definition == stored
    assert provider.definitions[-1] == stored
    assert result.output == "LATE"


async def test_a_rejected_register_leaves_no_local_tool_behind(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()) as provider:
        fake.fail(
            "Register",
            grpc.StatusCode.ALREADY_EXISTS,
            "taken",
            "DUPLICATE_TOOL",
            {"name": "shout", "suggestion": "shout_2"},
        )
        with pytest.raises(DuplicateToolError):
            await provider.register(shout)

        fake.answer(
            "Register",
            rpb.RegisterResponse(definition=convert.definition_to_proto(ToolDefinition(name="x"))),
        )
        await provider.register(shout)  # not a local DuplicateToolError

    assert [d.name for d in provider.definitions] == ["slow", "echo", "stuck", "x"]


async def test_a_registry_that_fails_the_stream_cancels_pending_work(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()) as provider:
        fake.send_call("c1", "stuck")
        await wait(tools.stuck_started)
        fake.abort_stream(grpc.StatusCode.UNAVAILABLE, "registry shutting down")

        await wait(tools.stuck_cancelled)
        with pytest.raises(ToolwireRpcError) as raised:
            await asyncio.wait_for(provider.wait_closed(), WAIT)
        assert provider.closed
        with pytest.raises(RuntimeError, match="not connected"):
            await provider.register(shout)

    assert raised.value.code is grpc.StatusCode.UNAVAILABLE
    assert raised.value.details == "registry shutting down"
    assert leftover_tasks() == []


async def test_a_registry_that_stops_cancels_pending_work(
    running_fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()) as provider:
        running_fake.fake.send_call("c1", "stuck")
        await wait(tools.stuck_started)
        await running_fake.server.stop(None)

        await wait(tools.stuck_cancelled)
        with pytest.raises(ToolwireRpcError):
            await asyncio.wait_for(provider.wait_closed(), WAIT)

    assert leftover_tasks() == []


async def test_a_registry_that_ends_the_stream_closes_the_provider_cleanly(
    fake: Any, client: AsyncToolwireClient, tools: Tools
) -> None:
    async with client.provide(tools.all()) as provider:
        fake.end_stream()
        await asyncio.wait_for(provider.wait_closed(), WAIT)

    assert leftover_tasks() == []


async def test_serve_tools_serves_until_the_registry_ends_the_stream(
    running_fake: Any,
) -> None:
    fake = running_fake.fake
    script = asyncio.create_task(
        asyncio.to_thread(serve_tools, running_fake.target, [shout], name="script")
    )

    hello = await fake.next_hello()
    fake.send_call("s1", "shout", '{"text": "hi"}')
    call_id, result = await fake.next_result()
    fake.end_stream()
    await asyncio.wait_for(script, WAIT)

    assert hello.provider_name == "script"
    assert (call_id, result.output) == ("s1", "HI")
