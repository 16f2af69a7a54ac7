"""The trusted runner and the command line it runs under."""

from __future__ import annotations

import subprocess
from pathlib import Path

from toolwire.sandbox import DenoRuntime
from toolwire.sandbox.process import net_permission

REPOSITORY = Path(__file__).resolve().parents[2]
RUNNER = REPOSITORY / "service" / "toolwire" / "sandbox" / "runner.ts"


def test_the_runner_type_checks_against_the_bridge(runtime: DenoRuntime, work_root: Path) -> None:
    # The sandbox runs the runner without a check: a drift in the bridge's API
    # (installBridge, ToolError) must show up here instead.
    result = subprocess.run(
        [
            runtime.deno_bin,
            "check",
            "--quiet",
            "--no-remote",
            "--cached-only",
            f"--config={REPOSITORY / 'deno.json'}",
            str(RUNNER),
        ],
        cwd=REPOSITORY,
        env={"DENO_DIR": str(work_root / "deno-dir"), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_command_line_grants_one_folder_and_one_address(runtime: DenoRuntime) -> None:
    run_dir = Path("/tmp/toolwire-run")
    command = runtime.command("http://127.0.0.1:50052", run_dir)
    assert command[0] == runtime.deno_bin
    assert command[1] == "run"
    assert command[-1] == str(RUNNER)
    flags = command[2:-1]
    assert "--allow-read=/tmp/toolwire-run" in flags
    assert "--allow-net=127.0.0.1:50052" in flags
    for denied in ("write", "env", "run", "ffi", "sys", "import"):
        assert f"--deny-{denied}" in flags
    for required in ("--no-prompt", "--no-remote", "--cached-only"):
        assert required in flags
    assert "--v8-flags=--max-old-space-size=64" in flags
    allows = [f for f in flags if f.startswith(("--allow", "-A"))]
    assert allows == ["--allow-read=/tmp/toolwire-run", "--allow-net=127.0.0.1:50052"]

    offline = runtime.command("", run_dir)
    assert "--deny-net" in offline
    assert not [f for f in offline if f.startswith("--allow-net")]


def test_the_allowed_address_is_exactly_the_registrys() -> None:
    assert net_permission("http://127.0.0.1:50052") == "127.0.0.1:50052"
    assert net_permission("http://127.0.0.1:50052/some/path") == "127.0.0.1:50052"
    assert net_permission("http://localhost") == "localhost:80"
    assert net_permission("https://registry.example") == "registry.example:443"
    assert net_permission("http://[::1]:8080") == "[::1]:8080"
    assert net_permission("") is None
