"""The conformance vectors for tools whose definitions crossed the wire.

A provider process registers the conformance tools over `Provide`, the way a
Node or Go agent registers its own. Their schemas travel as
`google.protobuf.Struct`, a map: the registry receives every object's keys in
sorted order (`convert.struct_to_dict` sorts them so that the order at least
does not depend on the sender) and puts back only the top-level properties, in
the order of the `parameters` list.

So, against the expected outputs made from the in-process definitions:
- dispatch gives the same outcomes: validation does not care about key order;
- Anthropic and MCP tools are equal as JSON data (their key order differs);
- OpenAI strict mode lists every property under `required`, in property
  order, so a nested object's `required` array comes out sorted: the data
  differ. Gemini's diagnostics follow the walk of the schema, so their order
  and the path of the once-per-tool `additionalProperties` note differ;
- stubs list a nested object's fields alphabetically.

Those differences are marked as strict xfails, not hidden by a looser
comparison: when the contract carries schemas with their order (for example as
JSON text, as it already does for arguments and `tools_json`), they pass and
the markers must go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from toolwire.models import ModelFormat
from toolwire.schema import normalize_definition
from toolwire_client import ToolwireClient

NESTED_ORDER_LOST = (
    "a Struct does not keep key order: nested properties of wire-registered schemas "
    "arrive sorted, and only top-level properties are put back in parameter order"
)
ORDER_SENSITIVE = {ModelFormat.OPENAI_CHAT, ModelFormat.OPENAI_RESPONSES, ModelFormat.GEMINI}


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


def test_model_tools(
    vectors: Any, client: ToolwireClient, model_format: ModelFormat, request: Any
) -> None:
    if model_format in ORDER_SENSITIVE:
        request.applymarker(pytest.mark.xfail(reason=NESTED_ORDER_LOST, strict=True))
    converted = client.to_model_tools(model_format)
    document = {
        "tools": converted.tools,
        "diagnostics": [d._asdict() for d in converted.diagnostics],
    }
    assert document == vectors.expected_model_tools(model_format)


@pytest.mark.xfail(reason=NESTED_ORDER_LOST, strict=True)
def test_stubs(vectors: Any, client: ToolwireClient) -> None:
    assert client.generate_stubs() == vectors.expected_stubs()


def test_dispatch(vectors: Any, client: ToolwireClient, dispatch_case: dict[str, Any]) -> None:
    result = client.dispatch(dispatch_case["tool"], dispatch_case["arguments_json"])
    vectors.check_dispatch(dispatch_case, result)
