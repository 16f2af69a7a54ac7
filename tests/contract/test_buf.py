"""The protos pass buf lint and buf format, and do not break the released contract.

`buf breaking` runs offline against proto/baseline/toolwire-v1.binpb, the Buf
image of the last release (written by scripts/release_contract.py). The tests
at the bottom make breaking edits in a copy of the protos to show that the
check catches them and lets additive changes through.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.descriptor_pb2 import FileDescriptorSet

REPO = Path(__file__).resolve().parents[2]
BUF = Path(sys.executable).parent / "buf"
BASELINE = REPO / "proto" / "baseline" / "toolwire-v1.binpb"
CONTRACT_FILES = ["toolwire/v1/registry_service.proto", "toolwire/v1/tool.proto"]


def run_buf(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    assert BUF.is_file(), f"buf is not installed next to {sys.executable} (the dev extra has it)"
    return subprocess.run(
        [str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def test_lint_is_clean() -> None:
    result = run_buf("lint")
    assert result.returncode == 0, f"buf lint:\n{output(result)}"


def test_format_is_clean() -> None:
    result = run_buf("format", "--diff", "--exit-code")
    assert result.returncode == 0, f"run `buf format -w`:\n{output(result)}"


def test_contract_does_not_break_the_last_release() -> None:
    result = run_buf("breaking", "--against", str(BASELINE))
    assert result.returncode == 0, (
        "The protos break the released toolwire.v1 contract:\n"
        f"{output(result)}\n"
        "Clients built against the last release would break. Keep field numbers and "
        "types, give new fields new numbers, `reserved` removed ones. Do not re-record "
        "the baseline to make this pass."
    )


def test_breaking_uses_every_file_rule() -> None:
    def rule_ids(*args: str) -> dict[str, list[str]]:
        result = run_buf("config", "ls-breaking-rules", "--format", "json", *args)
        assert result.returncode == 0, output(result)
        rules = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        return {r["id"]: r["categories"] for r in rules if not r["deprecated"]}

    file_rules = {i for i, cats in rule_ids("--version", "v2").items() if "FILE" in cats}
    configured = set(rule_ids("--configured-only"))
    assert file_rules, "buf lists no FILE rules"
    assert file_rules <= configured, f"not configured: {sorted(file_rules - configured)}"


def test_baseline_is_an_image_of_the_contract_outside_the_module() -> None:
    image = FileDescriptorSet.FromString(BASELINE.read_bytes())
    names = {f.name for f in image.file}
    assert set(CONTRACT_FILES) <= names, sorted(names)
    assert {f.package for f in image.file if f.name in CONTRACT_FILES} == {"toolwire.v1"}

    # proto/ is the module's root and the baseline sits inside it: buf must only
    # see the .proto files, never the image.
    listed = run_buf("ls-files")
    assert listed.returncode == 0, output(listed)
    assert sorted(listed.stdout.split()) == [f"proto/{name}" for name in CONTRACT_FILES]


# --- the check has teeth -------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the module (buf.yaml and the .proto files) to edit freely."""
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(REPO / "proto", tmp_path / "proto", ignore=shutil.ignore_patterns("baseline"))
    return tmp_path


def edit(workspace: Path, file: str, old: str, new: str) -> None:
    path = workspace / "proto" / file
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not in {file} exactly once; update this test"
    path.write_text(text.replace(old, new))


def breaking(workspace: Path) -> subprocess.CompletedProcess[str]:
    return run_buf("breaking", "--against", str(BASELINE), cwd=workspace)


def test_an_unchanged_copy_passes(workspace: Path) -> None:
    result = breaking(workspace)
    assert result.returncode == 0, output(result)


@pytest.mark.parametrize(
    ("file", "old", "new", "complaint"),
    [
        pytest.param(
            "toolwire/v1/tool.proto",
            "string caller_id = 1;",
            "string caller_id = 10;",
            'Previously present field "1" with name "caller_id" on message "CallContext" '
            "was deleted.",
            id="renumbered-field",
        ),
        pytest.param(
            "toolwire/v1/registry_service.proto",
            "rpc GenerateStubs(GenerateStubsRequest) returns (GenerateStubsResponse);",
            "",
            'Previously present RPC "GenerateStubs" on service "RegistryService" was deleted.',
            id="removed-rpc",
        ),
        pytest.param(
            "toolwire/v1/tool.proto",
            "string group = 7;",
            "int32 group = 7;",
            'Field "7" with name "group" on message "ToolDefinition" changed type '
            'from "string" to "int32".',
            id="changed-field-type",
        ),
        pytest.param(
            "toolwire/v1/tool.proto",
            "ERROR_CODE_CANCELLED = 9;",
            "",
            'Previously present enum value "9" on enum "ErrorCode" was deleted.',
            id="removed-enum-value",
        ),
    ],
)
def test_a_breaking_edit_fails_and_names_the_problem(
    workspace: Path, file: str, old: str, new: str, complaint: str
) -> None:
    edit(workspace, file, old, new)
    result = breaking(workspace)
    assert result.returncode != 0, f"buf breaking accepted a breaking edit:\n{output(result)}"
    assert complaint in output(result), output(result)
    assert file in output(result)


def test_an_additive_edit_passes(workspace: Path) -> None:
    edit(
        workspace,
        "toolwire/v1/tool.proto",
        "string user_id = 3;",
        "string user_id = 3;\n  // The tenant the call runs for.\n  string tenant_id = 4;",
    )
    edit(
        workspace,
        "toolwire/v1/registry_service.proto",
        "string name_prefix = 3;",
        "string name_prefix = 3;\n  repeated string labels = 16;",
    )
    assert run_buf("lint", cwd=workspace).returncode == 0
    result = breaking(workspace)
    assert result.returncode == 0, output(result)


# --- scripts/release_contract.py ----------------------------------------------


@pytest.fixture
def release_repo(workspace: Path) -> Path:
    """The workspace laid out like the repository, with the release script and
    the current baseline."""
    (workspace / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "release_contract.py", workspace / "scripts")
    (workspace / "proto" / "baseline").mkdir()
    shutil.copy(BASELINE, workspace / "proto" / "baseline" / BASELINE.name)
    return workspace


def release(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(repo / "scripts" / "release_contract.py")],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_release_refuses_to_record_a_breaking_contract(release_repo: Path) -> None:
    edit(release_repo, "toolwire/v1/tool.proto", "string group = 7;", "int32 group = 7;")
    baseline = release_repo / "proto" / "baseline" / BASELINE.name

    result = release(release_repo)

    assert result.returncode == 1
    assert "breaks the last release" in result.stdout
    assert 'changed type from "string" to "int32"' in result.stdout
    assert baseline.read_bytes() == BASELINE.read_bytes()


def test_release_records_an_additive_contract(release_repo: Path) -> None:
    edit(
        release_repo,
        "toolwire/v1/tool.proto",
        "string user_id = 3;",
        "string user_id = 3;\n  string tenant_id = 4;",
    )
    baseline = release_repo / "proto" / "baseline" / BASELINE.name

    result = release(release_repo)

    assert result.returncode == 0, result.stdout + result.stderr
    image = FileDescriptorSet.FromString(baseline.read_bytes())
    tool = next(f for f in image.file if f.name == "toolwire/v1/tool.proto")
    call_context = next(m for m in tool.message_type if m.name == "CallContext")
    assert [f.name for f in call_context.field][-1] == "tenant_id"
    # From now on, dropping the new field breaks the (new) release.
    edit(release_repo, "toolwire/v1/tool.proto", "  string tenant_id = 4;\n", "")
    dropped = run_buf("breaking", "--against", str(baseline), cwd=release_repo)
    assert dropped.returncode != 0
    assert 'with name "tenant_id" on message "CallContext" was deleted' in output(dropped)
