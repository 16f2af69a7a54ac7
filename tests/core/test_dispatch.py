"""Dispatch: lookup, validation, timeouts, truncation — and it never raises."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolwire.models import ErrorCode, ToolDefinition, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool, ToolContext

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer"},
        "tier": {"type": "string", "enum": ["core", "working", "archival"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
            "required": ["depth"],
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


def registry_with(handler: Any, *, schema: dict[str, Any] | None = None, **kw: Any) -> ToolRegistry:
    registry = ToolRegistry(**kw)
    definition = ToolDefinition(name="t", input_schema=schema or SCHEMA)
    registry.register(Tool.of(definition, handler))
    return registry


async def echo(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    return dict(arguments)


async def test_success_returns_structured_output_and_duration() -> None:
    result = await registry_with(echo).dispatch("t", '{"path": "a", "limit": 2}')
    assert result.success and result.error == "" and result.error_code is None
    assert result.structured_output == {"path": "a", "limit": 2}
    assert json.loads(result.output) == {"path": "a", "limit": 2}
    assert result.duration_seconds > 0


async def test_unknown_tool_suggests_close_names() -> None:
    registry = registry_with(echo)
    result = await registry.dispatch("tt", "{}")
    assert result.error_code is ErrorCode.NOT_FOUND
    assert result.error == "no tool named 'tt'; did you mean 't'?"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{}", "missing required field 'path'"),
        ('{"path": "a", "limit": true}', "'limit' must be an integer; got true (a boolean)"),
        ('{"path": "a", "limit": 1.5}', "'limit' must be an integer; got 1.5 (a number)"),
        (
            '{"path": "a", "tier": "hot"}',
            "'tier' must be one of core, working, archival; got 'hot'",
        ),
        ('{"path": "a", "options": {}}', "missing required field 'options.depth'"),
        ('{"path": "a", "tags": ["x", 3]}', "'tags[1]' must be a string; got 3 (an integer)"),
        ('{"path": "a", "pth": 1}', "unexpected field 'pth' (known fields: path, limit, tier"),
        ("[1, 2]", "arguments must be a JSON object of named fields, got an array"),
        ('"path"', "arguments must be a JSON object of named fields, got a string"),
        ('{"path": ', "arguments are not valid JSON: Expecting value at line 1 column 10"),
        ('{"path": NaN}', "arguments are not valid JSON: NaN is not valid JSON"),
    ],
)
async def test_bad_arguments_get_a_message_the_model_can_act_on(
    arguments: str, message: str
) -> None:
    called = False

    async def handler(args: Mapping[str, Any], context: ToolContext) -> str:
        nonlocal called
        called = True
        return "ran"

    result = await registry_with(handler).dispatch("t", arguments)
    assert not result.success and result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.startswith("invalid arguments for 't': ")
    assert message in result.error
    assert not called, "the handler must not run on invalid arguments"


async def test_oversize_arguments_are_refused_before_parsing() -> None:
    registry = registry_with(echo, max_argument_bytes=1000)
    result = await registry.dispatch("t", json.dumps({"path": "x" * 2000}))
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "the limit is 1,000 bytes" in result.error


async def test_arrays_and_objects_sent_as_json_text_are_accepted() -> None:
    result = await registry_with(echo).dispatch(
        "t", json.dumps({"path": "a", "tags": '["x", "y"]', "options": '{"depth": 2}'})
    )
    assert result.success, result.error
    assert result.structured_output == {"path": "a", "tags": ["x", "y"], "options": {"depth": 2}}


async def test_null_for_an_optional_field_means_absent() -> None:
    result = await registry_with(echo).dispatch("t", '{"path": "a", "limit": null, "tier": null}')
    assert result.success, result.error
    assert result.structured_output == {"path": "a"}


async def test_null_for_a_required_field_is_still_an_error() -> None:
    result = await registry_with(echo).dispatch("t", '{"path": null}')
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "'path' must be a string; got null" in result.error


async def test_empty_arguments_mean_an_empty_object() -> None:
    registry = registry_with(echo, schema={"type": "object", "properties": {}})
    for raw in ("", "  ", None, {}):
        assert (await registry.dispatch("t", raw)).success


async def test_handler_exception_becomes_a_failed_result() -> None:
    async def boom(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise KeyError("no such row")

    result = await registry_with(boom).dispatch("t", '{"path": "a"}')
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == "tool 't' failed: KeyError: 'no such row'"


async def test_sync_handler_exception_becomes_a_failed_result() -> None:
    def boom(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise ValueError("bad")

    result = await registry_with(boom).dispatch("t", '{"path": "a"}')
    assert result.error == "tool 't' failed: ValueError: bad"


async def test_async_timeout_really_cancels_the_work() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    registry = ToolRegistry()
    registry.register(
        Tool.of(
            ToolDefinition(name="slow", timeout_seconds=0.05, input_schema={"type": "object"}), slow
        )
    )
    result = await registry.dispatch("slow", "{}")
    assert result.error_code is ErrorCode.TIMEOUT
    assert result.error == "tool 'slow' did not finish within 0.05 s and was cancelled"
    assert started.is_set() and cancelled.is_set()


async def test_a_handler_raising_timeout_error_is_a_handler_error() -> None:
    async def own_timeout(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise TimeoutError("upstream timed out")

    result = await registry_with(own_timeout).dispatch("t", '{"path": "a"}')
    assert result.error_code is ErrorCode.HANDLER_ERROR


async def test_caller_deadline_shortens_the_timeout() -> None:
    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
        await asyncio.sleep(60)
        return "late"

    result = await registry_with(slow).dispatch("t", '{"path": "a"}', timeout=0.05)
    assert result.error_code is ErrorCode.TIMEOUT
    expired = await registry_with(slow).dispatch("t", '{"path": "a"}', timeout=0)
    assert expired.error_code is ErrorCode.TIMEOUT and "deadline passed" in expired.error


async def test_sync_timeout_is_reported_as_abandoned_and_counted() -> None:
    release = threading.Event()
    saw_cancel = threading.Event()

    def stuck(arguments: Mapping[str, Any], context: ToolContext) -> str:
        release.wait(10)
        if context.cancelled.is_set():
            saw_cancel.set()
        return "done"

    registry = ToolRegistry(sync_workers=4)
    registry.register(
        Tool.of(
            ToolDefinition(name="stuck", timeout_seconds=0.05, input_schema={"type": "object"}),
            stuck,
        )
    )
    first = await registry.dispatch("stuck", "{}")
    assert first.error_code is ErrorCode.TIMEOUT
    assert "synchronous handler that cannot be cancelled, so it was abandoned" in first.error
    assert "(1 abandoned now)" in first.error
    second = await registry.dispatch("stuck", "{}")
    assert "(2 abandoned now)" in second.error
    refused = await registry.dispatch("stuck", "{}")
    assert refused.error_code is ErrorCode.RESOURCE_EXHAUSTED
    assert "2 timed-out synchronous handlers are still running" in refused.error
    release.set()
    deadline = time.monotonic() + 5
    while registry._workers.abandoned and time.monotonic() < deadline:  # noqa: ASYNC110 (a thread releases it)
        await asyncio.sleep(0.01)
    assert registry._workers.abandoned == 0
    assert saw_cancel.is_set(), "the handler could see that the registry gave up on it"
    release.clear()
    assert (await registry.dispatch("stuck", "{}")).error_code is ErrorCode.TIMEOUT
    release.set()


async def test_output_above_the_limit_is_truncated_with_its_size() -> None:
    async def big(arguments: Mapping[str, Any], context: ToolContext) -> str:
        return "é" * 10_000  # 20,000 bytes

    result = await registry_with(big, max_output_bytes=1024).dispatch("t", '{"path": "a"}')
    assert result.success and result.truncated
    assert result.original_size_bytes == 20_000
    assert result.output.endswith("\n[output truncated — original size: 20,000 bytes]")
    assert len(result.output.encode()) <= 1024
    result.output.encode().decode()  # cut on a character boundary


async def test_structured_output_is_dropped_when_truncated() -> None:
    async def rows(arguments: Mapping[str, Any], context: ToolContext) -> list[int]:
        return list(range(5000))

    result = await registry_with(rows, max_output_bytes=100).dispatch("t", '{"path": "a"}')
    assert result.truncated and result.structured_output is None


async def test_output_at_the_limit_is_untouched() -> None:
    async def exact(arguments: Mapping[str, Any], context: ToolContext) -> str:
        return "x" * 1024

    result = await registry_with(exact, max_output_bytes=1024).dispatch("t", '{"path": "a"}')
    assert not result.truncated and result.output == "x" * 1024


async def test_handler_may_return_its_own_failed_result() -> None:
    async def refuse(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.fail(ErrorCode.HANDLER_ERROR, "disk full")

    result = await registry_with(refuse).dispatch("t", '{"path": "a"}')
    assert not result.success and result.error == "disk full"


async def test_context_reaches_the_handler() -> None:
    from toolwire.models import CallContext

    async def who(arguments: Mapping[str, Any], context: ToolContext) -> str:
        return f"{context.tool_name}:{context.call.user_id}:{context.remaining() > 0}"

    result = await registry_with(who).dispatch("t", '{"path": "a"}', CallContext(user_id="u1"))
    assert result.output == "t:u1:True"


async def test_cancelling_the_caller_cancels_the_handler() -> None:
    cancelled = asyncio.Event()

    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    task = asyncio.create_task(registry_with(slow).dispatch("t", '{"path": "a"}'))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_concurrent_dispatches_run_concurrently() -> None:
    gate = asyncio.Event()
    entered = 0

    async def wait(arguments: Mapping[str, Any], context: ToolContext) -> str:
        nonlocal entered
        entered += 1
        if entered == 50:
            gate.set()
        await asyncio.wait_for(gate.wait(), 5)
        return arguments["path"]

    registry = registry_with(wait)
    results = await asyncio.gather(*(registry.dispatch("t", {"path": str(i)}) for i in range(50)))
    assert [r.output for r in results] == [str(i) for i in range(50)]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(st.text(max_size=40), json_values.map(json.dumps)))
def test_dispatch_never_raises_and_keeps_the_error_invariant(raw: str) -> None:
    result = asyncio.run(registry_with(echo).dispatch("t", raw))
    assert isinstance(result, ToolResult)
    assert result.success == (result.error == "") == (result.error_code is None)


async def test_a_handler_can_reject_its_arguments() -> None:
    from toolwire.validation import ArgumentError

    async def picky(arguments: Mapping[str, Any], context: ToolContext) -> str:
        raise ArgumentError("'path' must name a file, not a folder")

    result = await registry_with(picky).dispatch("t", '{"path": "/"}')
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert result.error == "invalid arguments for 't': 'path' must name a file, not a folder"


async def test_a_handler_that_swallows_its_cancellation_still_times_out() -> None:
    async def stubborn(arguments: Mapping[str, Any], context: ToolContext) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "ignored the cancellation"
        return "late"

    result = await registry_with(stubborn).dispatch("t", '{"path": "a"}', timeout=0.05)
    assert result.error_code is ErrorCode.TIMEOUT
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_caller_cancellation_wins_over_a_simultaneous_timeout() -> None:
    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_soon(task.cancel)  # the caller gives up...
        time.sleep(0.03)  # noqa: ASYNC251 (blocks so the timeout fires in the same turn)
        await asyncio.sleep(60)
        return "late"

    task = asyncio.create_task(registry_with(slow).dispatch("t", '{"path": "a"}', timeout=0.01))
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"tier": "hot"}', "'tier' must be one of core, working; got 'hot'"),
        ('{"n": "x"}', "'n' must be an integer; got 'x' (a string)"),
        (
            '{"either": true}',
            "'either' matches none of the allowed forms: 'either' must be a string; got true "
            "(a boolean) or 'either' must be an integer; got true (a boolean)",
        ),
    ],
)
async def test_alternatives_are_explained_by_the_branch_that_matters(
    arguments: str, message: str
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "tier": {"anyOf": [{"type": "string", "enum": ["core", "working"]}, {"type": "null"}]},
            "n": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
    }
    result = await registry_with(echo, schema=schema).dispatch("t", arguments)
    assert result.error == f"invalid arguments for 't': {message}"
