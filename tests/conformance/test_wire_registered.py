"""The conformance vectors for tools whose definitions crossed the wire.

A provider process registers the conformance tools over `Provide`, the way a
Node or Go agent registers its own. Their schemas travel as JSON text
(`input_schema_json`) beside the `Struct` form: a Struct is a map and would
lose the order of keys, which stubs, OpenAI strict mode's `required` lists and
Gemini's diagnostics all follow. So every answer must equal the expected
outputs made from the in-process definitions, key order included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from toolwire.models import ModelFormat
from toolwire.schema import normalize_definition
from toolwire_client import ToolwireClient


@pytest.fixture(scope="module")
def client(provided_server: Any) -> Iterator[ToolwireClient]:
    with ToolwireClient(provided_server.target, timeout=10) as client:
        yield client


def test_top_level_parameter_order_survives(vectors: Any, client: ToolwireClient) -> None:
    """The `parameters` list keeps its order, and the registry orders the
    top-level properties of the schemas it hands out by it (`tools_json` is
    text, so that order reaches the caller)."""
    local = {d.name: normalize_definition(d) for d in vectors.tools.definitions()}
    order = {name: [p.name for p in d.parameters] for name, d in local.items()}
    for stored in client.list():
        assert [p.name for p in stored.parameters] == order[stored.name]
    for tool in client.to_model_tools(ModelFormat.ANTHROPIC).tools:
        assert list(tool["input_schema"]["properties"]) == order[tool["name"]]


def test_model_tools(vectors: Any, client: ToolwireClient, model_format: ModelFormat) -> None:
    converted = client.to_model_tools(model_format)
    document = {
        "tools": converted.tools,
        "diagnostics": [d._asdict() for d in converted.diagnostics],
    }
    assert document == vectors.expected_model_tools(model_format)


def test_stubs(vectors: Any, client: ToolwireClient) -> None:
    assert client.generate_stubs() == vectors.expected_stubs()


def test_dispatch(vectors: Any, client: ToolwireClient, dispatch_case: dict[str, Any]) -> None:
    result = client.dispatch(dispatch_case["tool"], dispatch_case["arguments_json"])
    vectors.check_dispatch(dispatch_case, result)
