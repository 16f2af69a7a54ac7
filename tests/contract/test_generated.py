"""generated/ is exactly what scripts/generate.py writes from proto/.

The test runs the same command a developer runs, into a temporary root, and
compares every file both ways: missing, extra and different files all fail.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "generated"
PROTOS = sorted((REPO / "proto").glob("toolwire/**/*.proto"))

# Interpreter caches appear next to generated Python modules once they are
# imported (toolwire.v1 links to generated/python/toolwire/v1); they are not
# generator output and git ignores them.
_NOT_OUTPUT = {"__pycache__"}


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not _NOT_OUTPUT.intersection(path.relative_to(root).parts)
    }


def _difference(expected: dict[str, bytes], actual: dict[str, bytes]) -> str:
    """'' when the trees match, else a report that names every differing file."""
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    different = sorted(p for p in expected.keys() & actual.keys() if expected[p] != actual[p])
    if not (missing or extra or different):
        return ""
    lines = ["generated/ is out of date with proto/ and the code generators:"]
    lines += [f"  missing from generated/: {p}" for p in missing]
    lines += [f"  not produced by the generators (stale?): {p}" for p in extra]
    lines += [f"  differs: {p}" for p in different]
    if different:
        first = different[0]
        diff = difflib.unified_diff(
            actual[first].decode(errors="replace").splitlines(),
            expected[first].decode(errors="replace").splitlines(),
            fromfile=f"generated/{first} (committed)",
            tofile=f"generated/{first} (regenerated)",
            lineterm="",
            n=1,
        )
        lines += ["", *list(diff)[:40]]
    lines += ["", "Run `python scripts/generate.py` and commit the result."]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regenerated")
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "generate.py"), "--root", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"scripts/generate.py failed:\n{result.stdout}{result.stderr}"
    return root / "generated"


@pytest.mark.parametrize("language", ["python", "ts"])
def test_generated_code_is_what_the_generators_produce(regenerated: Path, language: str) -> None:
    fresh = _files(regenerated / language)
    committed = _files(GENERATED / language) if (GENERATED / language).is_dir() else {}
    assert fresh, f"scripts/generate.py wrote nothing under generated/{language}"
    problem = _difference(expected=fresh, actual=committed)
    assert not problem, problem


def test_generation_writes_nothing_outside_the_known_languages(regenerated: Path) -> None:
    languages = {p.name for p in regenerated.iterdir()}
    committed = {p.name for p in GENERATED.iterdir()}
    assert languages == committed == {"python", "ts"}, (
        f"generated/ holds {sorted(committed)}, the generators write {sorted(languages)}; "
        "run `python scripts/generate.py`"
    )


def test_every_contract_has_every_output(regenerated: Path) -> None:
    """Guards the comparison against being vacuous: each proto file yields the
    messages, the type stubs, the grpc and Connect services and TypeScript."""
    assert PROTOS, "no .proto files found under proto/toolwire"
    files = set(_files(regenerated))
    for proto in PROTOS:
        stem = proto.relative_to(REPO / "proto").with_suffix("").as_posix()
        package = stem.rpartition("/")[0]
        expected = {
            f"python/{stem}_pb2.py",
            f"python/{stem}_pb2.pyi",
            f"python/{stem}_pb2_grpc.py",
            f"python/{package}/__init__.py",
            f"ts/{stem}_pb.ts",
        }
        if "service " in proto.read_text():
            expected.add(f"python/{stem}_connect.py")
        assert expected <= files, f"missing for {proto.name}: {sorted(expected - files)}"


def test_the_comparison_names_missing_extra_and_changed_files(
    regenerated: Path, tmp_path: Path
) -> None:
    stale = tmp_path / "generated"
    shutil.copytree(regenerated, stale)
    (stale / "python/toolwire/v1/tool_pb2.py").unlink()
    (stale / "ts/toolwire/v1/old_pb.ts").write_text("// left behind\n")
    connect = stale / "python/toolwire/v1/registry_service_connect.py"
    connect.write_text(connect.read_text() + "# edited by hand\n")
    (stale / "python/toolwire/v1/__pycache__").mkdir()
    (stale / "python/toolwire/v1/__pycache__/tool_pb2.cpython-311.pyc").write_bytes(b"\0")

    problem = _difference(expected=_files(regenerated), actual=_files(stale))

    assert "missing from generated/: python/toolwire/v1/tool_pb2.py" in problem
    assert "not produced by the generators (stale?): ts/toolwire/v1/old_pb.ts" in problem
    assert "differs: python/toolwire/v1/registry_service_connect.py" in problem
    assert "+# edited by hand" not in problem  # the diff reads committed -> regenerated
    assert "-# edited by hand" in problem
    assert "__pycache__" not in problem
    assert "Run `python scripts/generate.py`" in problem
