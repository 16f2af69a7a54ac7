"""`toolwire config` through the installed console script: check (good and bad
files, tokens from the environment), schema, hash-token and the example."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
TOKENS = {"TOOLWIRE_OPS_TOKEN": "o" * 32, "TOOLWIRE_AGENT_TOKEN": "a" * 32}

GOOD = """
[[auth.tokens]]
principal = "agent"
scopes = ["dispatch"]
token_env = "AGENT_TOKEN"
policy = "agents"

[[auth.tokens]]
principal = "ops"
scopes = ["admin"]
token_sha256 = "{sha}"

[policies.agents]
deny = ["secret_*"]
exec.mode = "deny"

[sandbox.exec]
memory_mb = 256

[limits]
max_concurrent_per_principal = 8

[audit]
arguments = "none"
"""


def toolwire(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    return subprocess.run(
        [TOOLWIRE, "config", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=60,
    )


def write(tmp_path: Path, text: str, name: str = "toolwire.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def good_file(tmp_path: Path) -> Path:
    return write(tmp_path, GOOD.replace("{sha}", hashlib.sha256(b"o" * 32).hexdigest()))


def test_check_summarises_a_good_file(tmp_path: Path) -> None:
    path = good_file(tmp_path)
    done = toolwire(
        "check",
        str(path),
        env={"AGENT_TOKEN": "x" * 24, "TOOLWIRE_TOKENS": "ci=dispatch+register:" + "c" * 20},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"{path}: valid")
    lines = out.splitlines()
    agent = next(line for line in lines if line.strip().startswith("agent "))
    assert "dispatch" in agent and "policy agents" in agent and "$AGENT_TOKEN" in agent
    ops = next(line for line in lines if line.strip().startswith("ops "))
    assert "admin" in ops and "policy default" in ops and "token_sha256" in ops
    ci = next(line for line in lines if line.strip().startswith("ci "))
    assert "dispatch+register" in ci and "TOOLWIRE_TOKENS" in ci
    assert "  agents: allow every tool; deny secret_*; exec deny" in out
    assert "  default: allow every tool; exec allowlist" in out
    assert "  exec: memory_mb=256" in out
    assert "8 concurrent calls per principal" in out
    assert "audit: on, arguments none" in out
    assert "x" * 24 not in out and "c" * 20 not in out


def test_check_refuses_a_file_with_mistakes(tmp_path: Path) -> None:
    path = write(
        tmp_path, "[policies.default]\ndney = []\n[limits]\nmax_concurrent_per_principal = -1\n"
    )
    done = toolwire("check", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "policies.default.dney: not a known setting" in done.stderr
    assert "limits.max_concurrent_per_principal" in done.stderr


def test_check_refuses_bad_toml_with_its_line(tmp_path: Path) -> None:
    done = toolwire("check", str(write(tmp_path, "[audit]\nenabled = yes\n")))
    assert done.returncode == 2
    assert "not valid TOML" in done.stderr and "line 2" in done.stderr


def test_check_refuses_a_missing_file(tmp_path: Path) -> None:
    done = toolwire("check", str(tmp_path / "absent.toml"))
    assert done.returncode == 2 and "cannot read the configuration" in done.stderr


def test_check_refuses_an_unset_token_variable_unless_told_not_to_look(tmp_path: Path) -> None:
    path = good_file(tmp_path)
    done = toolwire("check", str(path))
    assert done.returncode == 2
    assert "$AGENT_TOKEN, which is unset or empty" in done.stderr
    assert "--no-env" in done.stderr
    alone = toolwire("check", "--no-env", str(path))
    assert alone.returncode == 0, alone.stderr
    assert "policy agents" in alone.stdout


def test_check_refuses_a_malformed_environment_token(tmp_path: Path) -> None:
    done = toolwire(
        "check", str(write(tmp_path, "")), env={"TOOLWIRE_TOKENS": "ci=root:" + "s" * 20}
    )
    assert done.returncode == 2
    assert "TOOLWIRE_TOKENS entry 1 ('ci')" in done.stderr and "s" * 20 not in done.stderr


def test_check_of_a_file_without_tokens_says_development_mode(tmp_path: Path) -> None:
    done = toolwire("check", str(write(tmp_path, "")))
    assert done.returncode == 0, done.stderr
    assert "development server" in done.stdout


def test_check_warns_about_an_allowlist_pattern_that_never_matches(tmp_path: Path) -> None:
    path = write(tmp_path, '[policies.default.exec]\nallowlist = ["ls "]\n')
    done = toolwire("check", str(path))
    assert done.returncode == 0, done.stderr
    assert "warning: policies.default.exec.allowlist[0]" in done.stderr


def test_schema_is_json_schema_with_the_sections() -> None:
    done = toolwire("schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    assert "properties" in schema
    assert {"auth", "policies", "sandbox", "limits", "approvals", "audit"} <= set(
        schema["properties"]
    )
    assert schema["$schema"].startswith("https://json-schema.org/")


def test_hash_token_prints_the_digest_of_stdin() -> None:
    token = "a-long-enough-token-0123456789"
    done = toolwire("hash-token", stdin=token + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == hashlib.sha256(token.encode()).hexdigest()
    assert token not in done.stdout + done.stderr


@pytest.mark.parametrize("stdin", ["", "\n", "short-token\n"])
def test_hash_token_refuses_an_empty_or_short_token(stdin: str) -> None:
    done = toolwire("hash-token", stdin=stdin)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "token" in done.stderr


def test_a_hashed_token_configures_a_principal(tmp_path: Path) -> None:
    digest = toolwire("hash-token", stdin="provider-token-0123456789\n").stdout.strip()
    path = write(
        tmp_path,
        f'[[auth.tokens]]\nprincipal = "provider"\nscopes = ["register"]\n'
        f'token_sha256 = "{digest}"\n',
    )
    done = toolwire("check", str(path))
    assert done.returncode == 0, done.stderr
    assert "provider" in done.stdout and "token_sha256" in done.stdout


def test_the_example_passes_check(tmp_path: Path) -> None:
    example = toolwire("example")
    assert example.returncode == 0, example.stderr
    assert example.stdout.lstrip().startswith("#")
    path = write(tmp_path, example.stdout)
    done = toolwire("check", str(path), env=TOKENS)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for expected in ("policy ops", "policy agents", "exec allowlist", "exec full", "memory_mb"):
        assert expected in done.stdout
    assert toolwire("check", "--no-env", str(path)).returncode == 0
