"""The security configuration: defaults, every kind of mistake reported with
its place and what is allowed there, tokens from the file and the environment,
and the shipped example."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from toolwire.audit import Redaction
from toolwire.auth import Scope
from toolwire.cli.config import example_text
from toolwire.models import SafetyTier
from toolwire.policy.config import (
    TOKENS_ENV,
    ConfigError,
    ToolwireConfig,
    json_schema,
    load_config,
    parse_config,
    token_entries,
    tokens_from_env,
)
from toolwire.policy.rules import ExecMode, OnMiss

SHA = hashlib.sha256(b"a-token-only-the-test-knows").hexdigest()


def problem(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "toolwire.toml")
    return str(caught.value)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolwire.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- defaults -------------------------------------------------------------------


def test_an_empty_file_is_the_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ""))
    assert config == ToolwireConfig()
    assert list(config.policies) == ["default"]
    default = config.policies["default"]
    assert (default.allow, default.deny, default.approve_privileged) == ((), (), True)
    assert (default.exec.mode, default.exec.on_miss) == (ExecMode.ALLOWLIST, OnMiss.APPROVE)
    assert config.auth.tokens == ()
    assert config.limits.max_concurrent_per_principal == 64
    assert config.audit.enabled and config.audit.arguments is Redaction.REDACT


def test_a_file_naming_only_other_policies_keeps_the_default_one() -> None:
    config = parse_config({"policies": {"agents": {"deny": ["exec"]}}})
    assert sorted(config.policies) == ["agents", "default"]
    assert config.policies["default"] == ToolwireConfig().policies["default"]
    assert config.policies["agents"].deny == ("exec",)
    assert sorted(parse_config({"policies": {}}).policies) == ["default"]


def test_a_file_may_set_the_default_policy_itself() -> None:
    config = parse_config({"policies": {"default": {"allow_tiers": ["read_only"]}}})
    assert config.policies["default"].allow_tiers == (SafetyTier.READ_ONLY,)


# -- mistakes name their place ----------------------------------------------------


def test_an_unknown_key_is_named_by_its_path() -> None:
    message = problem({"policies": {"default": {"dney": ["exec"]}}})
    assert message.startswith("toolwire.toml: 1 problem(s)")
    assert "policies.default.dney: not a known setting" in message
    assert "toolwire config schema" in message


def test_an_unknown_top_level_section_is_named() -> None:
    assert "polices: not a known setting" in problem({"polices": {}})


@pytest.mark.parametrize(
    ("data", "place", "allowed"),
    [
        (
            {"policies": {"ops": {"allow_tiers": ["readonly"]}}},
            "policies.ops.allow_tiers[0]",
            "'read_only', 'side_effecting' or 'privileged'",
        ),
        (
            {"policies": {"default": {"deny_tiers": ["read_only", "dangerous"]}}},
            "policies.default.deny_tiers[1]",
            "'read_only', 'side_effecting' or 'privileged'",
        ),
        (
            {"policies": {"default": {"exec": {"mode": "sometimes"}}}},
            "policies.default.exec.mode",
            "'full', 'allowlist' or 'deny'",
        ),
        (
            {"policies": {"default": {"exec": {"on_miss": "ask"}}}},
            "policies.default.exec.on_miss",
            "'approve' or 'deny'",
        ),
        (
            {"audit": {"arguments": "all"}},
            "audit.arguments",
            "'redact', 'full' or 'none'",
        ),
    ],
)
def test_a_wrong_choice_names_its_place_and_the_choices(
    data: dict[str, Any], place: str, allowed: str
) -> None:
    message = problem(data)
    assert f"{place}: " in message
    assert allowed in message


def test_a_bad_scope_names_the_token_and_the_scopes() -> None:
    message = problem(
        {"auth": {"tokens": [{"principal": "ci", "scopes": ["dispach"], "token_env": "CI_TOKEN"}]}}
    )
    assert "auth.tokens[0].scopes[0]: " in message
    assert "'dispatch', 'register' or 'admin'" in message


def test_a_token_needs_at_least_one_scope() -> None:
    message = problem(
        {"auth": {"tokens": [{"principal": "ci", "scopes": [], "token_env": "CI_TOKEN"}]}}
    )
    assert "auth.tokens[0].scopes: " in message and "at least 1" in message


@pytest.mark.parametrize(
    "sources",
    [{"token_env": "CI_TOKEN", "token_sha256": SHA}, {}],
    ids=["both", "neither"],
)
def test_a_token_has_exactly_one_source(sources: dict[str, str]) -> None:
    second = {"principal": "ci", "scopes": ["dispatch"], **sources}
    first = {"principal": "ops", "scopes": ["admin"], "token_env": "OPS_TOKEN"}
    message = problem({"auth": {"tokens": [first, second]}})
    assert "auth.tokens[1]: give exactly one of token_env and token_sha256" in message


def test_a_digest_must_be_64_hex_digits() -> None:
    message = problem(
        {"auth": {"tokens": [{"principal": "ci", "scopes": ["dispatch"], "token_sha256": "abc"}]}}
    )
    assert "auth.tokens[0].token_sha256: " in message and "64" in message


def test_a_principal_name_must_be_plain() -> None:
    message = problem(
        {"auth": {"tokens": [{"principal": "a b", "scopes": ["dispatch"], "token_env": "T"}]}}
    )
    assert "auth.tokens[0].principal: " in message


def test_a_token_naming_a_missing_policy_names_the_token_and_the_policies() -> None:
    message = problem(
        {
            "auth": {
                "tokens": [
                    {"principal": "agent", "scopes": ["dispatch"], "token_env": "T", "policy": "ag"}
                ]
            },
            "policies": {"agents": {}},
        }
    )
    assert "auth.tokens[0].policy names 'ag'" in message
    assert "there are agents, default" in message
    assert "(top level)" not in message


@pytest.mark.parametrize(
    ("data", "place"),
    [
        ({"limits": {"max_concurrent_per_principal": -1}}, "limits.max_concurrent_per_principal"),
        ({"limits": {"max_concurrent_per_principal": 0}}, "limits.max_concurrent_per_principal"),
        ({"sandbox": {"exec": {"memory_mb": -5}}}, "sandbox.exec.memory_mb"),
        ({"approvals": {"ttl_seconds": -1}}, "approvals.ttl_seconds"),
    ],
)
def test_negative_limits_are_refused_at_their_place(data: dict[str, Any], place: str) -> None:
    message = problem(data)
    assert f"{place}: Input should be greater than 0" in message


def test_a_negative_tool_limit_names_the_tool() -> None:
    message = problem({"limits": {"tool_concurrency": {"exec": 2, "fetch": -2}}})
    assert "limits: tool_concurrency must be positive, not for fetch" in message


def test_every_problem_is_reported_at_once() -> None:
    message = problem(
        {"policies": {"default": {"dney": []}}, "limits": {"max_concurrent_per_principal": -1}}
    )
    assert message.startswith("toolwire.toml: 2 problem(s)")
    assert "policies.default.dney" in message and "limits.max_concurrent_per_principal" in message


def test_a_toml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[limits]\nmax_concurrent_per_principal = 3\n[policies.default\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and "not valid TOML" in str(caught.value)
    assert "line 3" in str(caught.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "absent.toml")


def test_the_file_name_leads_a_validation_message(tmp_path: Path) -> None:
    path = write(tmp_path, "[policies.default]\ndney = []\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: 1 problem(s)")


def test_the_schema_forbids_unknown_keys_for_editors() -> None:
    schema = json_schema()
    assert schema["additionalProperties"] is False
    assert {"auth", "policies", "sandbox", "limits", "approvals", "audit"} <= set(
        schema["properties"]
    )


# -- tokens ----------------------------------------------------------------------


def tokens_config(**token: Any) -> ToolwireConfig:
    return parse_config(
        {"auth": {"tokens": [{"principal": "agent", "scopes": ["dispatch"], **token}]}}
    )


def test_a_token_from_the_environment_is_kept_as_its_digest() -> None:
    secret = "a-token-from-the-environment"
    (entry,) = token_entries(tokens_config(token_env="AGENT_TOKEN"), {"AGENT_TOKEN": secret})
    assert entry.principal == "agent" and entry.scopes == frozenset({Scope.DISPATCH})
    assert entry.token_sha256 == hashlib.sha256(secret.encode()).digest()
    assert entry.token_sha256 != secret.encode()
    assert secret not in repr(entry)


def test_surrounding_blanks_of_an_environment_token_are_not_part_of_it() -> None:
    (entry,) = token_entries(
        tokens_config(token_env="AGENT_TOKEN"), {"AGENT_TOKEN": " a-token-with-a-newline\n"}
    )
    assert entry.token_sha256 == hashlib.sha256(b"a-token-with-a-newline").digest()


def test_a_digest_from_the_file_is_used_as_it_is() -> None:
    (entry,) = token_entries(tokens_config(token_sha256=SHA.upper(), policy=""), {})
    assert entry.token_sha256 == bytes.fromhex(SHA)


@pytest.mark.parametrize("environ", [{}, {"AGENT_TOKEN": ""}, {"AGENT_TOKEN": "  \n"}])
def test_an_unset_or_empty_token_variable_is_an_error(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        token_entries(tokens_config(token_env="AGENT_TOKEN"), environ)
    message = str(caught.value)
    assert "auth.tokens[0] ('agent')" in message and "$AGENT_TOKEN" in message
    assert "unset or empty" in message


def test_tokens_from_the_environment_variable() -> None:
    value = "ci=dispatch+register:first-secret-token, ops=admin:second:secret=token,"
    assert tokens_from_env(value) == [
        ("ci", (Scope.DISPATCH, Scope.REGISTER), "first-secret-token"),
        ("ops", (Scope.ADMIN,), "second:secret=token"),
    ]
    assert tokens_from_env("") == []


def test_file_and_environment_tokens_are_both_entries() -> None:
    config = tokens_config(token_env="AGENT_TOKEN", policy="")
    entries = token_entries(
        config, {"AGENT_TOKEN": "agent-secret-token", TOKENS_ENV: "ci=dispatch:ci-secret-token"}
    )
    assert [(e.principal, e.policy) for e in entries] == [("agent", ""), ("ci", "")]
    assert entries[1].token_sha256 == hashlib.sha256(b"ci-secret-token").digest()
    for entry, secret in zip(entries, ("agent-secret-token", "ci-secret-token"), strict=True):
        assert entry.token_sha256 != secret.encode()
        assert entry.token_sha256.hex() != secret


@pytest.mark.parametrize(
    "value",
    ["ci:dispatch:secret-token", "ci=dispatch", "=dispatch:secret-token", "c i=dispatch:tok"],
)
def test_a_malformed_environment_entry_is_an_error_without_its_secret(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        tokens_from_env(f"ok=dispatch:fine-token,{value}")
    message = str(caught.value)
    assert f"{TOKENS_ENV} entry 2 is not 'principal=scope+scope:token'" in message
    assert "secret-token" not in message and "fine-token" not in message


def test_an_unknown_scope_in_the_environment_names_the_entry_and_the_scopes() -> None:
    with pytest.raises(ConfigError) as caught:
        tokens_from_env("ci=dispatch+root:secret-token")
    message = str(caught.value)
    assert "entry 1 ('ci')" in message and "dispatch+root" in message
    assert "dispatch, register, admin" in message
    assert "secret-token" not in message


# -- the example -----------------------------------------------------------------


def test_the_example_passes_and_covers_every_section(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, example_text()))
    environ = {"TOOLWIRE_OPS_TOKEN": "o" * 32, "TOOLWIRE_AGENT_TOKEN": "a" * 32}
    entries = token_entries(config, environ)
    assert [(e.principal, e.policy) for e in entries] == [("ops", ""), ("agent", "agents")]
    assert all(t.token_env for t in config.auth.tokens)
    assert sorted(config.policies) == ["agents", "default", "ops"]
    agents = config.policies["agents"]
    assert agents.exec.mode is ExecMode.ALLOWLIST and agents.exec.allowlist
    assert config.policies["ops"].exec.mode is ExecMode.FULL
    assert config.sandbox["exec"].memory_mb is not None
    assert config.limits.tool_concurrency
    assert config.approvals.ttl_seconds != ToolwireConfig().approvals.ttl_seconds
    assert config.audit.enabled
