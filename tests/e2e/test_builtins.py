"""The built-in tools, one group at a time, over gRPC against `toolwire serve`."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.models import CallContext, ErrorCode, SafetyTier
from toolwire_client import ToolwireClient

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
ALICE = CallContext(caller_id="e2e", user_id="alice")
BOB = CallContext(caller_id="e2e", user_id="bob")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLWIRE, *args], capture_output=True, text=True, timeout=60)


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (
            b"<html><head><title>Tides</title></head>"
            b"<body><h1>Tides</h1><p>High at noon.</p></body></html>"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def web_page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/tides"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def server(web_page: str, start_module_server: Callable[..., Any]) -> Any:
    return start_module_server("--allow-host", "127.0.0.1")


def test_list_shows_every_builtin_group_with_its_tier(server: Any) -> None:
    with ToolwireClient(server.target) as client:
        tools = {t.name: t for t in client.list()}
    expected = {
        "memory_read": ("memory", SafetyTier.READ_ONLY),
        "memory_write": ("memory", SafetyTier.SIDE_EFFECTING),
        "execute_code": ("code", SafetyTier.SIDE_EFFECTING),
        "web_fetch": ("web", SafetyTier.SIDE_EFFECTING),
        "web_search": ("web", SafetyTier.READ_ONLY),
        "http_fetch": ("net", SafetyTier.SIDE_EFFECTING),
        "file_read": ("fs", SafetyTier.READ_ONLY),
        "file_write": ("fs", SafetyTier.SIDE_EFFECTING),
        "exec": ("runtime", SafetyTier.PRIVILEGED),
    }
    for name, (group, tier) in expected.items():
        assert (tools[name].group, tools[name].safety_tier) == (group, tier), name
    listing = run_cli("list", "--target", server.target)
    assert any(
        line.split()[:3] == ["exec", "privileged", "runtime"]
        for line in listing.stdout.splitlines()
    )


def test_memory_is_per_user_and_needs_a_user(server: Any) -> None:
    with ToolwireClient(server.target) as client:
        written = client.dispatch(
            "memory_write", {"label": "tide", "content": "high tide at noon"}, context=ALICE
        )
        assert written.success and written.output.startswith("Memory written")
        mine = client.dispatch("memory_read", {"query": "tide"}, context=ALICE)
        assert "high tide at noon" in mine.output
        theirs = client.dispatch("memory_read", {"query": "tide"}, context=BOB)
        assert theirs.success and "high tide" not in theirs.output
        anonymous = client.dispatch("memory_read", {"query": "tide"})
        assert anonymous.error_code is ErrorCode.DENIED_BY_POLICY
        assert "user id" in anonymous.error
        bad_tier = client.dispatch("memory_list", {"tier": "hot"}, context=ALICE)
        assert "'tier' must be one of core, working, archival; got 'hot'" in bad_tier.error


def test_memory_survives_a_restart_and_approvals_go_through_the_operator(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    first = start_server(data_dir=tmp_path)
    call = ("--target", first.target, "--user-id", "carol")
    wrote = run_cli(
        "call", "memory_write", "--args", '{"label": "persona", "content": "likes tea"}', *call
    )
    assert wrote.returncode == 0, wrote.stderr
    first.process.terminate()
    assert first.process.wait(15) == 0

    data = ("--data-dir", str(tmp_path))
    assert (
        run_cli(
            "memory", "set-permission", "--user", "carol", "persona", "familiar", *data
        ).returncode
        == 0
    )
    second = start_server(data_dir=tmp_path)
    call = ("--target", second.target, "--user-id", "carol")
    read = run_cli("call", "memory_read", "--args", '{"query": "tea"}', *call)
    assert "likes tea" in read.stdout, "written before the restart, read after it"
    queued = run_cli(
        "call",
        "memory_write",
        "--args",
        '{"label": "persona", "content": "likes coffee"}',
        "--json",
        *call,
    )
    assert json.loads(queued.stdout)["output"].startswith("Mutation queued for approval")
    pending = json.loads(run_cli("memory", "pending", "--user", "carol", *data).stdout)
    assert [m["content"] for m in pending] == ["likes coffee"]
    approved = run_cli("memory", "approve", pending[0]["id"], *data)
    assert approved.returncode == 0, approved.stderr
    after = run_cli("call", "memory_read", "--args", '{"query": "coffee"}', *call)
    assert "likes coffee" in after.stdout


def test_files_are_confined_to_the_workspace(server: Any) -> None:
    with ToolwireClient(server.target) as client:
        wrote = client.dispatch("file_write", {"path": "notes/a.txt", "content": "one\ntwo\n"})
        assert wrote.success, wrote.error
        read = client.dispatch("file_read", {"path": "notes/a.txt", "start_line": 2})
        assert read.success and "two" in read.output and "one" not in read.output
        escape = client.dispatch("file_read", {"path": "../../etc/passwd"})
        assert escape.error_code is ErrorCode.DENIED_BY_POLICY
        assert escape.error.startswith("path traversal denied")
    assert (server.data_dir / "workspace" / "notes" / "a.txt").read_text() == "one\ntwo\n"


def test_exec_runs_in_the_workspace_once_approved(server: Any) -> None:
    """The default exec approvals: an allowlist (empty) whose misses wait for
    an operator; the development principal may approve."""
    command = {"command": "echo hello && pwd && exit 3"}
    with ToolwireClient(server.target) as client:
        asked = client.dispatch("exec", command)
        assert asked.error_code is ErrorCode.APPROVAL_REQUIRED, asked.error
        assert asked.approval is not None
        assert asked.approval.summary == "exec: echo hello && pwd && exit 3"
        client.approve(asked.approval.ticket_id, "a test")
        result = client.dispatch("exec", command, approval_ticket=asked.approval.ticket_id)
    assert result.sandbox is not None and result.sandbox.runtime.value == "host"
    assert result.structured_output["exit_code"] == 3
    assert "hello" in result.structured_output["stdout"]
    assert str((server.data_dir / "workspace").resolve()) in result.structured_output["stdout"]


def test_web_fetch_and_http_fetch_reach_allowed_hosts_only(server: Any, web_page: str) -> None:
    with ToolwireClient(server.target) as client:
        page = client.dispatch("web_fetch", {"url": web_page})
        assert page.success, page.error
        assert "# Tides" in page.output and "High at noon." in page.output
        raw = client.dispatch("http_fetch", {"url": web_page, "method": "GET"})
        assert raw.success and raw.structured_output["status"] == 200
        blocked = client.dispatch("web_fetch", {"url": "http://10.1.2.3/"})
        assert blocked.error_code is ErrorCode.DENIED_BY_POLICY
        no_search = client.dispatch("web_search", {"query": "tides"})
        assert no_search.error_code is ErrorCode.HANDLER_ERROR
        assert "no search provider is configured" in no_search.error


def test_execute_code_runs_in_the_code_runtime(server: Any) -> None:
    with ToolwireClient(server.target) as client:
        result = client.dispatch("execute_code", {"code": "return 6 * 7"}, timeout=90)
    assert result.success, result.error
    assert result.structured_output["value"] == 42


def test_builtin_groups_can_be_turned_off(start_server: Callable[..., Any]) -> None:
    live = start_server("--disable", "runtime", "--disable", "web")
    with ToolwireClient(live.target) as client:
        names = {t.name for t in client.list()}
    assert "exec" not in names and "web_fetch" not in names and "file_read" in names
    bad = run_cli("serve", "--disable", "nope")
    assert bad.returncode == 2 and "unknown built-in group(s) nope" in bad.stderr
