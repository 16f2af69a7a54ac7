"""The conformance vectors against the core: a `ToolRegistry` in this process.

The expected outputs in expected/ were made by this runner. After an intended
change to the model formats or the stub generator, rewrite them with

    TOOLWIRE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/conformance/test_core.py

and review the diff: every transport's runner compares against these files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import json_format
from toolwire import convert
from toolwire.models import ModelFormat
from toolwire.registry import ToolRegistry
from toolwire.v1 import tool_pb2 as pb


@pytest.fixture
def registry(vectors: Any) -> Iterator[ToolRegistry]:
    registry = ToolRegistry()
    for tool in vectors.tools.tools():
        registry.register(tool)
    yield registry
    registry.close()


def _document(registry: ToolRegistry, fmt: ModelFormat) -> dict[str, Any]:
    converted = registry.to_model_tools(fmt)
    return {
        "tools": converted.tools,
        "diagnostics": [d.model_dump() for d in converted.diagnostics],
    }


def test_tools_json_is_proto3_json_of_tool_definitions(vectors: Any) -> None:
    """Any protobuf runtime reads the fixture, and reads it as the core does
    (up to key order, which a Struct does not keep)."""
    for raw in vectors.tools.tools_json():
        message = json_format.ParseDict(raw, pb.ToolDefinition())
        assert convert.definition_from_proto(message) == vectors.tools.definition_from_json(raw)


def test_the_nasty_cases_are_there(vectors: Any) -> None:
    definitions = {d.name: d for d in vectors.tools.definitions()}
    assert max(len(n) for n in definitions) == 64
    assert any("*/" in d.description for d in definitions.values())
    assert any(not d.description.isascii() for d in definitions.values())
    assert any("$defs" in (d.input_schema or {}) for d in definitions.values())
    assert {c["tool"] for c in vectors.dispatch_cases} - definitions.keys() == {
        "get_wether",
        "nothing_like_it",
    }


def test_model_tools(vectors: Any, registry: ToolRegistry, model_format: ModelFormat) -> None:
    path = vectors.model_tools_path(model_format)
    document = _document(registry, model_format)
    if vectors.update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    expected = vectors.expected_model_tools(model_format)
    assert document == expected
    assert vectors.ordered(document) == vectors.ordered(expected), "same data, other key order"


def test_stubs(vectors: Any, registry: ToolRegistry) -> None:
    stubs = registry.generate_stubs()
    if vectors.update:
        vectors.stubs_path.write_text(stubs, encoding="utf-8")
    assert stubs == vectors.expected_stubs()


async def test_dispatch(
    vectors: Any, registry: ToolRegistry, dispatch_case: dict[str, Any]
) -> None:
    result = await registry.dispatch(dispatch_case["tool"], dispatch_case["arguments_json"])
    vectors.check_dispatch(dispatch_case, result)
