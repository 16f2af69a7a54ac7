"""The `toolwire` command line against a live server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLWIRE, *args], capture_output=True, text=True, timeout=60)


def test_reflection_lists_the_registry_service(live_server: Any) -> None:
    with grpc.insecure_channel(live_server.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert "toolwire.v1.RegistryService" in names


def test_list_call_stubs_and_model_tools(live_server: Any) -> None:
    target = ("--target", live_server.target)
    listing = run_cli("list", *target)
    assert listing.returncode == 0
    assert any(
        line.split()[:3] == ["add", "read_only", "math"] for line in listing.stdout.splitlines()
    )

    call = run_cli("call", "add", "--args", '{"a": 2, "b": 40}', *target)
    assert (call.returncode, call.stdout.strip()) == (0, "42")

    bad = run_cli("call", "shout", "--args", '{"text": "x", "style": "loud"}', *target)
    assert bad.returncode == 1
    assert "'style' must be one of upper, title; got 'loud'" in bad.stderr

    full = run_cli(
        "call", "shout", "--args", '{"text": "hi there", "style": "title"}', "--json", *target
    )
    assert json.loads(full.stdout)["output"] == "Hi There"

    stubs = run_cli("stubs", *target)
    assert "export async function add(" in stubs.stdout

    tools = run_cli("model-tools", "--format", "openai_chat", *target)
    names = {t["function"]["name"] for t in json.loads(tools.stdout)}
    assert {"add", "shout", "memory_read", "file_read"} <= names


def test_client_commands_explain_an_unreachable_server(free_port: Callable[[], int]) -> None:
    result = run_cli("list", "--target", f"127.0.0.1:{free_port()}")
    assert result.returncode == 2
    assert "unavailable" in result.stderr.lower()


def test_bad_tool_module_is_a_clear_startup_error(free_port: Callable[[], int]) -> None:
    result = run_cli(
        "serve", "--no-builtins", "--port", str(free_port()), "--tools", "no_such_module_here"
    )
    assert result.returncode == 2
    assert "cannot load tools from 'no_such_module_here'" in result.stderr


def test_sigterm_shuts_down_gracefully(start_server: Callable[..., Any]) -> None:
    server = start_server("--grace", "1")
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(15) == 0
    output = server.process.stdout.read().decode() if server.process.stdout else ""
    assert "shutting down" in output


def test_port_in_use_is_a_clear_startup_error(live_server: Any) -> None:
    port = live_server.target.rsplit(":", 1)[1]
    result = run_cli("serve", "--no-builtins", "--port", port)
    assert result.returncode == 2, result.stderr
    assert "could not listen" in result.stderr
