"""Running one handler: under a timeout that really stops it, and never raising.

Async handlers are cancelled when their time is up. A sync handler runs in a
worker thread, which Python cannot kill: on timeout its `ToolContext.cancelled`
flag is set, the call is reported as abandoned, and the thread is counted until
it returns; past a limit, new sync calls are refused rather than piling up
unbounded threads.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from types import CoroutineType
from typing import Any

from .models import ErrorCode, ToolResult
from .output import Output, shape
from .tools import Tool, ToolContext
from .validation import ArgumentError


class SyncWorkers:
    """The threads that run blocking handlers, and the ones they lost."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="toolwire-sync")
        self._lock = threading.Lock()
        self._abandoned = 0

    @property
    def abandoned(self) -> int:
        return self._abandoned

    def saturated(self) -> bool:
        return self._abandoned >= self.max_workers // 2

    def submit(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Future[Any]:
        return self._pool.submit(tool.handler, arguments, context)

    def abandon(self, future: Future[Any]) -> int:
        with self._lock:
            self._abandoned += 1
            count = self._abandoned
        future.add_done_callback(self._release)
        return count

    def _release(self, _: Future[Any]) -> None:
        with self._lock:
            self._abandoned -= 1

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _timeout_message(name: str, seconds: float) -> str:
    return f"tool '{name}' did not finish within {seconds:g} s and was cancelled"


def _handler_failure(name: str, error: BaseException) -> ToolResult:
    if isinstance(error, ArgumentError):
        return ToolResult.fail(
            ErrorCode.INVALID_ARGUMENTS, f"invalid arguments for '{name}': {error}"
        )
    detail = str(error) or "no message"
    return ToolResult.fail(
        ErrorCode.HANDLER_ERROR, f"tool '{name}' failed: {type(error).__name__}: {detail}"
    )


async def invoke(
    tool: Tool,
    arguments: dict[str, Any],
    context: ToolContext,
    timeout: float,
    workers: SyncWorkers,
) -> Output | ToolResult:
    """The handler's outcome. Cancellation of the caller propagates."""
    name = tool.definition.name
    if tool.blocking:
        return await _invoke_blocking(tool, arguments, context, timeout, workers)
    task = asyncio.current_task()
    assert task is not None, "dispatch runs inside a task"
    expiry = _Expiry(task)
    timer = asyncio.get_running_loop().call_later(timeout, expiry)
    try:
        value = tool.handler(arguments, context)
        if isinstance(value, CoroutineType) or inspect.isawaitable(value):
            value = await value
    except asyncio.CancelledError:
        if expiry.expired and task.uncancel() == 0:
            context.cancelled.set()
            return ToolResult.fail(ErrorCode.TIMEOUT, _timeout_message(name, timeout))
        raise
    except Exception as e:
        return _handler_failure(name, e)
    finally:
        timer.cancel()
    if expiry.expired:  # the handler swallowed its cancellation
        task.uncancel()
        return ToolResult.fail(ErrorCode.TIMEOUT, _timeout_message(name, timeout))
    return shape(value)


class _Expiry:
    """Cancels the dispatching task when its time is up: what `asyncio.timeout`
    does, with one timer handle and none of its bookkeeping (a third of the
    cost, which shows in every dispatch)."""

    __slots__ = ("_task", "expired")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self._task = task
        self.expired = False

    def __call__(self) -> None:
        self.expired = True
        self._task.cancel()


async def _invoke_blocking(
    tool: Tool,
    arguments: dict[str, Any],
    context: ToolContext,
    timeout: float,
    workers: SyncWorkers,
) -> Output | ToolResult:
    name = tool.definition.name
    if workers.saturated():
        return ToolResult.fail(
            ErrorCode.RESOURCE_EXHAUSTED,
            f"{workers.abandoned} timed-out synchronous handlers are still running; "
            f"tool '{name}' is refused until they finish",
        )
    future = workers.submit(tool, arguments, context)
    try:
        async with asyncio.timeout(timeout) as scope:
            value = await asyncio.wrap_future(future)
    except TimeoutError as e:
        if not scope.expired():
            return _handler_failure(name, e)
        context.cancelled.set()
        count = workers.abandon(future)
        return ToolResult.fail(
            ErrorCode.TIMEOUT,
            f"tool '{name}' did not finish within {timeout:g} s; it is a synchronous handler "
            f"that cannot be cancelled, so it was abandoned and its thread keeps running until "
            f"it returns ({count} abandoned now)",
        )
    except asyncio.CancelledError:
        context.cancelled.set()
        if not future.cancel():
            workers.abandon(future)
        raise
    except Exception as e:
        return _handler_failure(name, e)
    if inspect.isawaitable(value):
        return _handler_failure(name, TypeError("a sync handler returned an awaitable"))
    return shape(value)
