"""The conformance vectors over gRPC, against a live `toolwire serve`.

The server runs `--no-builtins --tools conformance_tools`: the tools are
registered in the server's process, exactly as the core runner registers them,
so every answer must equal the core's expected output. `ToModelTools` is
compared as JSON data (the contract every transport keeps) and, because
`tools_json` is text made on the server, also with its key order; stubs as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from toolwire.models import ModelFormat
from toolwire_client import ToolwireClient


@pytest.fixture(scope="module")
def client(conformance_server: Any) -> Iterator[ToolwireClient]:
    with ToolwireClient(conformance_server.target, timeout=10) as client:
        yield client


def test_only_the_conformance_tools_are_served(vectors: Any, client: ToolwireClient) -> None:
    served = [d.name for d in client.list()]
    assert served == sorted(d.name for d in vectors.tools.definitions())


def test_model_tools(vectors: Any, client: ToolwireClient, model_format: ModelFormat) -> None:
    converted = client.to_model_tools(model_format)
    document = {
        "tools": converted.tools,
        "diagnostics": [d._asdict() for d in converted.diagnostics],
    }
    expected = vectors.expected_model_tools(model_format)
    assert document == expected
    # Registered in the server's process, the schemas kept their key order,
    # and tools_json is text: the order survives this path.
    assert vectors.ordered(document) == vectors.ordered(expected)


def test_stubs(vectors: Any, client: ToolwireClient) -> None:
    assert client.generate_stubs() == vectors.expected_stubs()


def test_dispatch(vectors: Any, client: ToolwireClient, dispatch_case: dict[str, Any]) -> None:
    result = client.dispatch(dispatch_case["tool"], dispatch_case["arguments_json"])
    vectors.check_dispatch(dispatch_case, result)
