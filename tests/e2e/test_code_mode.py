"""Code mode end to end: a client dispatches `execute_code`; TypeScript in the
Deno sandbox calls a built-in tool and a tool served by another process, over
gRPC-web with the run's token, and returns the combined value."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.models import CallContext, ErrorCode
from toolwire_client import ToolwireClient

HERE = Path(__file__).parent
DANA = CallContext(caller_id="e2e", user_id="dana")

COMBINE = """
const sum = await remote_add({ a: 20, b: 22 });
await memory_write({ label: "answer", content: `the answer is ${sum}` });
const found = (await memory_read({ query: "answer" })) as Array<{ content: string }>;
console.log("found", found.length);
return { sum, remembered: found[0].content };
"""


@pytest.fixture(scope="module")
def server(start_module_server: Callable[..., Any]) -> Any:
    return start_module_server("--code-timeout", "5")


@pytest.fixture(scope="module")
def provider(server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    markers = tmp_path_factory.mktemp("markers")
    process = subprocess.Popen(
        [sys.executable, str(HERE / "provider_app.py"), server.target, str(markers)]
    )
    with ToolwireClient(server.target) as client:
        deadline = time.monotonic() + 20
        while "remote_add" not in {t.name for t in client.list()}:
            assert time.monotonic() < deadline, "the provider never registered"
            time.sleep(0.05)
    yield
    process.send_signal(signal.SIGINT)
    process.wait(10)


def run(server: Any, code: str, **extra: Any) -> Any:
    with ToolwireClient(server.target) as client:
        return client.dispatch("execute_code", {"code": code, **extra}, context=DANA, timeout=90)


def test_code_calls_a_builtin_and_a_remote_tool_and_returns_the_result(
    server: Any, provider: None
) -> None:
    result = run(server, COMBINE)
    assert result.success, result.error + result.output
    report = result.structured_output
    assert report["value"] == {"sum": 42, "remembered": "the answer is 42"}
    assert report["console"].strip() == "found 1"
    calls = [(c["name"], c["success"]) for c in report["tool_calls"]]
    assert calls == [("remote_add", True), ("memory_write", True), ("memory_read", True)]


def test_type_errors_come_back_before_anything_runs(server: Any, provider: None) -> None:
    result = run(server, 'const n: number = await remote_add({ a: "x", b: 1 });\nreturn n;')
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "type-check" in result.error and "line 1" in result.error
    assert result.structured_output is None


def test_a_failed_tool_is_a_typed_error_the_code_can_catch(server: Any, provider: None) -> None:
    code = """
    try {
      await fails({ reason: "disk on fire" });
      return "no error";
    } catch (e: any) {
      return { name: e.name, code: e.code, message: e.message };
    }
    """
    result = run(server, code)
    assert result.success, result.error
    value = result.structured_output["value"]
    assert value["name"] == "ToolError" and value["code"] == "handler_error"
    assert "disk on fire" in value["message"]


def test_code_cannot_call_execute_code_or_reach_the_grpc_port(server: Any) -> None:
    grpc_port = server.target.rsplit(":", 1)[1]
    code = f"""
    const out: string[] = [];
    try {{ await (globalThis as any).__callTool__("execute_code", {{ code: "return 1" }}); }}
    catch (e) {{ out.push((e as any).code); }}
    try {{ await fetch("http://127.0.0.1:{grpc_port}/"); }}
    catch (e) {{ out.push((e as Error).name); }}
    return out;
    """
    result = run(server, code)
    assert result.success, result.error
    assert result.structured_output["value"] == ["denied_by_policy", "NotCapable"]


def test_an_infinite_loop_is_stopped(server: Any) -> None:
    with ToolwireClient(server.target) as client:
        started = time.monotonic()
        result = client.dispatch(
            "execute_code", {"code": "while (true) {}", "check": False}, context=DANA, timeout=90
        )
    assert result.error_code is ErrorCode.TIMEOUT
    assert time.monotonic() - started < 30
