"""Importing MCP tools, without a network: name mapping, tiers from annotations,
results, and the registry sink's reconciliation and collisions."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types
import pytest
from toolwire.mcp.importer import RegistrySink, definition_of, result_of, safety_tier
from toolwire.mcp.names import map_names, tool_name
from toolwire.models import ErrorCode, SafetyTier, ToolDefinition
from toolwire.names import NAME_PATTERN
from toolwire.policy.config import ConfigError, McpServerConfig, parse_config
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool

SERVER = McpServerConfig(name="gh", command=("true",), timeout_seconds=12.0)


def test_names_are_prefixed() -> None:
    assert tool_name("github", "create_issue") == "github__create_issue"
    assert tool_name("a-b", "x-y") == "a-b__x-y"


def test_invalid_characters_are_replaced() -> None:
    assert tool_name("fs", "read.file") == "fs__read_file"
    assert tool_name("fs", "dir/list files") == "fs__dir_list_files"
    assert tool_name("fs", "résumé") == "fs__r_sum_"


def test_long_names_are_cut_with_a_stable_hash() -> None:
    long = "x" * 80
    name = tool_name("srv", long)
    assert len(name) == 64 and NAME_PATTERN.fullmatch(name)
    assert name == tool_name("srv", long)  # deterministic
    other = tool_name("srv", "x" * 79 + "y")
    assert other != name and other[:55] == name[:55]


def test_empty_names_still_map_to_a_valid_name() -> None:
    assert NAME_PATTERN.fullmatch(tool_name("srv", ""))


@pytest.mark.parametrize("prefix", ["", "9lives", "has space", "x" * 33])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        tool_name(prefix, "tool")


def test_collisions_are_reported_and_neither_tool_is_imported() -> None:
    names = map_names("fs", ["read.file", "read_file", "write"])
    assert names.to_mcp == {"fs__write": "write"}
    [collision] = names.collisions
    assert collision.name == "fs__read_file"
    assert set(collision.mcp_names) == {"read.file", "read_file"}
    assert "none of them is imported" in collision.describe("fs")


def test_names_map_back() -> None:
    names = map_names("fs", ["read.file", "list"])
    assert names.mcp_name("fs__read_file") == "read.file"
    assert names.mcp_name("fs__list") == "list"
    assert names.mcp_name("fs__nope") is None


@pytest.mark.parametrize(
    ("annotations", "tier"),
    [
        (None, SafetyTier.SIDE_EFFECTING),
        (mcp_types.ToolAnnotations(), SafetyTier.SIDE_EFFECTING),
        (mcp_types.ToolAnnotations(read_only_hint=True), SafetyTier.READ_ONLY),
        (
            mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=True),
            SafetyTier.READ_ONLY,
        ),
        (mcp_types.ToolAnnotations(destructive_hint=True), SafetyTier.PRIVILEGED),
        (mcp_types.ToolAnnotations(destructive_hint=False), SafetyTier.SIDE_EFFECTING),
    ],
)
def test_annotations_give_the_tier(
    annotations: mcp_types.ToolAnnotations | None, tier: SafetyTier
) -> None:
    assert safety_tier(annotations) is tier


def test_definitions_keep_the_mcp_name_schemas_group_and_timeout() -> None:
    tool = mcp_types.Tool(
        name="read.file",
        description="Read a file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        annotations=mcp_types.ToolAnnotations(read_only_hint=True),
    )
    d = definition_of(SERVER, "gh__read_file", tool)
    assert d.name == "gh__read_file" and d.description == "Read a file."
    assert d.input_schema == tool.input_schema and d.output_schema == tool.output_schema
    assert d.group == "gh" and d.timeout_seconds == 12.0
    assert d.safety_tier is SafetyTier.READ_ONLY
    assert d.labels == {"mcp.server": "gh", "mcp.tool": "read.file"}


def test_results_map_text_structured_and_errors() -> None:
    ok = result_of(
        mcp_types.CallToolResult(
            content=[mcp_types.TextContent(text="a"), mcp_types.TextContent(text="b")],
            structured_content={"n": 1},
        )
    )
    assert ok.success and ok.output == "a\nb" and ok.structured_output == {"n": 1}
    only_structured = result_of(mcp_types.CallToolResult(content=[], structured_content={"n": 2}))
    assert only_structured.output == '{"n": 2}'
    failed = result_of(
        mcp_types.CallToolResult(content=[mcp_types.TextContent(text="boom")], is_error=True)
    )
    assert not failed.success and failed.error_code is ErrorCode.HANDLER_ERROR
    assert failed.error == "boom"
    silent = result_of(mcp_types.CallToolResult(content=[], is_error=True))
    assert silent.error_code is ErrorCode.HANDLER_ERROR and silent.error


def test_the_config_section() -> None:
    config = parse_config(
        {"mcp": {"servers": [{"name": "gh", "command": ["gh-mcp"], "env": {"A": "1"}}]}}
    )
    assert config.mcp.servers[0].command == ("gh-mcp",)
    for bad, message in [
        ({"name": "gh"}, "exactly one of command and url"),
        ({"name": "gh", "command": ["x"], "url": "http://h/mcp"}, "exactly one"),
        ({"name": "gh", "url": "http://h/mcp", "cwd": "/"}, "apply to a command"),
        ({"name": "1gh", "command": ["x"]}, "name"),
        ({"name": "gh", "command": ["x"], "restart_max_seconds": 0.1}, "restart_max"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_config({"mcp": {"servers": [bad]}})
    with pytest.raises(ConfigError, match="two MCP servers are named 'gh'"):
        parse_config({"mcp": {"servers": [{"name": "gh", "url": "http://h"}] * 2}})


def _tool(name: str, description: str = "") -> Tool:
    async def handler(arguments: Any, context: Any) -> str:
        return name

    return Tool(ToolDefinition(name=name, description=description), handler)


def test_the_registry_sink_adds_replaces_removes_and_skips_taken_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register(_tool("gh__taken"))
    sink = RegistrySink(registry, "gh")

    async def scenario() -> None:
        with caplog.at_level(logging.ERROR, logger="toolwire.mcp.import"):
            await sink.publish([_tool("gh__a"), _tool("gh__b"), _tool("gh__taken")])
        assert {d.name for d in registry.list()} == {"gh__a", "gh__b", "gh__taken"}
        assert registry.owner_of("gh__a") == "mcp:gh" and registry.owner_of("gh__taken") is None
        assert "gh__taken" in caplog.text and "already registered" in caplog.text
        await sink.publish([_tool("gh__a", "changed"), _tool("gh__c")])
        assert {d.name for d in registry.list()} == {"gh__a", "gh__c", "gh__taken"}
        a = registry.get("gh__a")
        assert a is not None and a.description == "changed"
        sink.withdraw()
        assert {d.name for d in registry.list()} == {"gh__taken"}

    asyncio.run(scenario())


def test_a_server_that_cannot_start_is_retried_without_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolwire.mcp.importer import McpImporter

    registry = ToolRegistry()
    server = McpServerConfig(
        name="ghost",
        command=("/nonexistent/mcp-server",),
        restart_initial_seconds=0.01,
        restart_max_seconds=0.05,
    )
    importer = McpImporter(server, RegistrySink(registry, "ghost"))

    async def scenario() -> None:
        task = asyncio.create_task(importer.run())
        try:
            for _ in range(3000):
                if importer.attempts >= 3:
                    break
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert importer.attempts >= 3 and importer.generation == 0
        assert not importer.connected.is_set() and registry.list() == []
        result = await importer.call("anything", {}, 1.0)
        assert result.error_code is ErrorCode.PROVIDER_UNAVAILABLE
        assert "'ghost'" in result.error

    with caplog.at_level(logging.WARNING, logger="toolwire.mcp.import"):
        asyncio.run(scenario())
    assert "MCP server 'ghost' is unavailable" in caplog.text


def test_a_streamable_http_server_is_imported_and_called() -> None:
    import socket
    import subprocess
    import sys
    from pathlib import Path

    from toolwire.mcp.importer import McpImporter

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sample = str(Path(__file__).parent / "sample_mcp_server.py")
    process = subprocess.Popen(
        [sys.executable, sample, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    registry = ToolRegistry()
    server = McpServerConfig(
        name="web", url=f"http://127.0.0.1:{port}/mcp", restart_initial_seconds=0.1,
        restart_max_seconds=0.5,
    )  # fmt: skip
    importer = McpImporter(server, RegistrySink(registry, "web"))

    async def scenario() -> None:
        task = asyncio.create_task(importer.run())
        try:
            await asyncio.wait_for(importer.connected.wait(), 60)
            result = await registry.dispatch("web__add", {"a": 1, "b": 2})
            assert result.success and result.output == "3", result.error
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    try:
        asyncio.run(scenario())
    finally:
        process.terminate()
        process.wait(timeout=30)
