"""The Node agent (clients/node) against a live server, over native gRPC.

The agent is TypeScript; `tsc` (from node_modules) type-checks it, and Node
runs it through clients/node/ts-hooks.mjs, which erases the types on load.
It serves a tool of its own over `Provide`, calls a Python-hosted tool, has
the registry call its own tool back, converts definitions and runs the
conformance cases; this test checks its report, and checks the answers it saw
against the fixtures once more from Python.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT_DIR = REPO / "clients" / "node"
CONFORMANCE = REPO / "tests" / "conformance"
NODE = shutil.which("node")
TSC = REPO / "node_modules" / ".bin" / "tsc"

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_agent_type_checks() -> None:
    assert TSC.exists(), "node_modules is missing: run `npm ci` (make install)"
    done = subprocess.run(
        [str(TSC), "-p", str(AGENT_DIR)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def report(conformance_target: str) -> dict[str, Any]:
    assert NODE is not None
    done = subprocess.run(
        [
            NODE,
            "--import",
            str(AGENT_DIR / "register.mjs"),
            str(AGENT_DIR / "src" / "agent.ts"),
            "--target",
            conformance_target,
            "--conformance",
            str(CONFORMANCE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode in (0, 1), f"the agent crashed:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_check_of_the_agent_held(report: dict[str, Any]) -> None:
    failed = [name for name, held in report["checks"].items() if not held]
    assert not failed
    assert report["ok"] is True
    assert report["runtime"].startswith("node v")


def test_the_provider_tool_was_registered_and_called_back(report: dict[str, Any]) -> None:
    assert report["provider"]["provider_id"]
    stored = report["provider"]["stored_definition"]
    assert stored["name"] == "node_reverse"
    assert stored["input_schema"]["required"] == ["text"]
    assert "node_reverse" in report["listed"]
    round_trip = report["round_trip"]
    assert round_trip["success"] is True
    assert round_trip["structured_output"]["reversed"] == "🚀 ✓ eriwloot"
    assert round_trip["structured_output"]["runtime"] == report["runtime"]
    # The registry refused bad arguments itself: only the good call reached Node.
    assert report["refused"]["error_code"] == "invalid_arguments"
    assert "'text' must be a string" in report["refused"]["error"]
    assert report["provider"]["calls_served"] == 1
    assert "node_reverse" not in report["after_close"]


def test_the_provider_tool_converts_for_models(report: dict[str, Any]) -> None:
    [tool] = report["own_model_tools"]
    assert tool["name"] == "node_reverse"
    assert tool["input_schema"]["properties"]["text"]["type"] == "string"


def test_a_python_tool_was_dispatched(report: dict[str, Any]) -> None:
    assert report["python_tool"]["success"] is True
    assert report["python_tool"]["structured_output"] == {"location": "Zürich", "days": 3}


def test_model_tools_equal_the_fixtures(report: dict[str, Any]) -> None:
    formats = report["model_tools"]
    assert set(formats) == {p.stem for p in (CONFORMANCE / "expected" / "model_tools").iterdir()}
    for name, seen in formats.items():
        expected = _json(CONFORMANCE / "expected" / "model_tools" / f"{name}.json")
        assert {"tools": seen["tools"], "diagnostics": seen["diagnostics"]} == expected, name


def test_stubs_equal_the_fixture(report: dict[str, Any]) -> None:
    expected = (CONFORMANCE / "expected" / "stubs.ts").read_text(encoding="utf-8")
    assert report["stubs"]["typescript"] == expected


def test_dispatch_cases_equal_the_fixtures(report: dict[str, Any]) -> None:
    cases = _json(CONFORMANCE / "dispatch_cases.json")["cases"]
    seen = {c["id"]: c["actual"] for c in report["conformance"]["cases"]}
    assert list(seen) == [c["id"] for c in cases]
    for case in cases:
        expect, actual = case["expect"], seen[case["id"]]
        assert actual["success"] is expect["success"], (case["id"], actual)
        if expect["success"]:
            assert actual["structured_output"] == expect["structured_output"], case["id"]
        else:
            assert actual["error_code"] == expect["error_code"], (case["id"], actual)
            assert expect["error_contains"] in actual["error"], (case["id"], actual)
