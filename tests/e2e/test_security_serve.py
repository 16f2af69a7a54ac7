"""`toolwire serve` as an operator secures it, in real processes: TLS with a
certificate made by openssl, mutual TLS, tokens from the environment, the
refusals at start (an exposed address without tokens, a bad configuration),
the development-mode warning, and the audit log of what principals did.

Certificates are made in the test by the `openssl` command line (part of the
machine image: without it the tests fail, they do not skip).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from toolwire.models import ErrorCode
from toolwire_client import ToolwireClient, ToolwireRpcError

HERE = Path(__file__).parent
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
SERVER_NAME = "localhost"
WAIT = 10.0
STARTUP = 60.0

AGENT_TOKEN = "agent-e2e-token-4f1c"
OPS_TOKEN = "ops-e2e-token-9b2d"


# -- certificates -----------------------------------------------------------------


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd)


@dataclass(frozen=True)
class Pki:
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path

    def read(self, path: Path) -> bytes:
        return path.read_bytes()

    @property
    def client_pair(self) -> tuple[bytes, bytes]:
        """(chain, key), as the client takes it."""
        return self.client_cert.read_bytes(), self.client_key.read_bytes()


EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A self-signed server certificate for localhost; a client CA and a client
    certificate it issued; a self-signed client certificate it did not."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", *EC, "-keyout", "server.key", "-out", "server.pem", "-days", "2",
            "-subj", f"/CN={SERVER_NAME}", "-addext", f"subjectAltName=DNS:{SERVER_NAME}",
            cwd=d)  # fmt: skip
    openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=toolwire test client CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)  # fmt: skip
    openssl("req", *EC, "-keyout", "client.key", "-out", "client.csr",
            "-subj", "/CN=agent", cwd=d)  # fmt: skip
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "client.pem", "-days", "2",
            "-extfile", "client.ext", cwd=d)  # fmt: skip
    openssl("req", "-x509", *EC, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2",
            "-subj", "/CN=agent", cwd=d)  # fmt: skip
    return Pki(
        d / "server.pem",
        d / "server.key",
        d / "ca.pem",
        d / "client.pem",
        d / "client.key",
        d / "rogue.pem",
        d / "rogue.key",
    )


# -- processes ----------------------------------------------------------------------


def base_env(**extra: str) -> dict[str, str]:
    """The test's environment without any toolwire settings of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    return {**env, "PYTHONPATH": str(HERE), **extra}


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    target: str
    data_dir: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def stop(served: Served) -> int:
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)
        try:
            served.process.wait(30)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()
    return served.process.returncode


def wait_serving(served: Served, channel: grpc.Channel) -> None:
    deadline = time.monotonic() + STARTUP
    stub = health_pb2_grpc.HealthStub(channel)
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise RuntimeError(f"toolwire serve exited early:\n{served.output()}")
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            time.sleep(0.1)
    raise TimeoutError(f"toolwire serve did not report SERVING:\n{served.output()}")


Launch = Callable[..., Served]


@pytest.fixture
def launch(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[Launch]:
    """Starts `toolwire serve` (sample tools, no built-ins, both ports free) and
    waits until it serves, over `channel(target)` (plain unless given)."""
    started: list[Served] = []

    def start(
        *args: str,
        env: dict[str, str] | None = None,
        channel: Callable[[str], grpc.Channel] | None = None,
    ) -> Served:
        port = free_port()
        data_dir = tmp_path / f"data-{len(started)}"
        log = tmp_path / f"serve-{len(started)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [TOOLWIRE, "serve", "--port", str(port), "--http-port", "0",
                 "--no-builtins", "--tools", "sample_tools", "--data-dir", str(data_dir),
                 "--grace", "1", *args],
                env=base_env() if env is None else env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        served = Served(process, f"{SERVER_NAME}:{port}", data_dir, log)
        started.append(served)
        open_channel = channel or grpc.insecure_channel
        with open_channel(served.target) as ch:
            wait_serving(served, ch)
        return served

    yield start
    for served in started:
        stop(served)


def refused_at_start(
    *args: str, env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """`toolwire serve` that is expected to exit at once."""
    return subprocess.run(
        [TOOLWIRE, "serve", "--port", "0", "--http-port", "0", "--no-builtins",
         "--data-dir", str(tmp_path / "data"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )  # fmt: skip


def write_config(tmp_path: Path, text: str, name: str = "toolwire.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


TOKENS_CONFIG = """
[[auth.tokens]]
principal = "agent"
scopes = ["dispatch"]
token_env = "E2E_AGENT_TOKEN"
policy = "agents"

[[auth.tokens]]
principal = "ops"
scopes = ["dispatch"]
token_env = "E2E_OPS_TOKEN"

[policies.agents]
deny = ["shout"]
"""


def token_env() -> dict[str, str]:
    return base_env(E2E_AGENT_TOKEN=AGENT_TOKEN, E2E_OPS_TOKEN=OPS_TOKEN)


# -- TLS ----------------------------------------------------------------------------


def tls_channel(
    pki: Pki, client: tuple[bytes, bytes] | None = None
) -> Callable[[str], grpc.Channel]:
    def open_channel(target: str) -> grpc.Channel:
        chain, key = client if client is not None else (None, None)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=pki.read(pki.server_cert), private_key=key, certificate_chain=chain
        )
        return grpc.secure_channel(target, credentials)

    return open_channel


def assert_unreachable(client: ToolwireClient) -> None:
    with client, pytest.raises(ToolwireRpcError) as caught:
        client.list()
    assert caught.value.code is grpc.StatusCode.UNAVAILABLE, caught.value


def test_tls_round_trip_with_a_token_from_the_environment(
    launch: Launch, pki: Pki, tmp_path: Path
) -> None:
    config = write_config(tmp_path, TOKENS_CONFIG)
    served = launch(
        "--config", str(config),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
        env=token_env(), channel=tls_channel(pki),
    )  # fmt: skip
    roots = pki.read(pki.server_cert)
    with ToolwireClient(
        served.target, token=OPS_TOKEN, root_certificates=roots, timeout=WAIT
    ) as ops:
        assert {t.name for t in ops.list()} == {"add", "shout"}
        assert ops.dispatch("add", {"a": 20, "b": 22}).output == "42"
        assert ops.dispatch("shout", {"text": "tls"}).output == "TLS"
    # The token still counts over TLS: none, or a wrong one, is refused.
    for token in ("", "not-the-token"):
        with (
            ToolwireClient(served.target, token=token, root_certificates=roots, timeout=WAIT) as c,
            pytest.raises(ToolwireRpcError) as caught,
        ):
            c.list()
        assert caught.value.code is grpc.StatusCode.UNAUTHENTICATED
        assert caught.value.reason == ("TOKEN_MISSING" if not token else "TOKEN_INVALID")
    # A plaintext client cannot talk to the TLS listener at all.
    assert_unreachable(ToolwireClient(served.target, token=OPS_TOKEN, timeout=WAIT))
    # Nor can a TLS client that does not trust the server's certificate.
    assert_unreachable(
        ToolwireClient(
            served.target,
            token=OPS_TOKEN,
            root_certificates=pki.read(pki.client_ca),
            timeout=WAIT,
        )
    )
    assert "DEVELOPMENT MODE" not in served.output()


def test_mutual_tls_requires_a_client_certificate_from_the_ca(
    launch: Launch, pki: Pki, tmp_path: Path
) -> None:
    config = write_config(tmp_path, TOKENS_CONFIG)
    served = launch(
        "--config", str(config),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
        "--tls-client-ca", str(pki.client_ca),
        env=token_env(), channel=tls_channel(pki, pki.client_pair),
    )  # fmt: skip
    roots = pki.read(pki.server_cert)
    assert_unreachable(
        ToolwireClient(served.target, token=AGENT_TOKEN, root_certificates=roots, timeout=WAIT)
    )
    rogue = (pki.read(pki.rogue_cert), pki.read(pki.rogue_key))
    assert_unreachable(
        ToolwireClient(
            served.target,
            token=AGENT_TOKEN,
            root_certificates=roots,
            client_certificate=rogue,
            timeout=WAIT,
        )
    )
    with ToolwireClient(
        served.target,
        token=AGENT_TOKEN,
        root_certificates=roots,
        client_certificate=pki.client_pair,
        timeout=WAIT,
    ) as agent:
        assert {t.name for t in agent.list()} == {"add"}  # agents may not shout
        assert agent.dispatch("add", {"a": 1, "b": 1}).output == "2"
    # A client certificate is not a token: the call still needs one.
    with (
        ToolwireClient(
            served.target, root_certificates=roots, client_certificate=pki.client_pair, timeout=WAIT
        ) as anonymous,
        pytest.raises(ToolwireRpcError) as caught,
    ):
        anonymous.list()
    assert caught.value.code is grpc.StatusCode.UNAUTHENTICATED


# -- refusals at start ----------------------------------------------------------------


def test_an_exposed_address_without_tokens_is_refused(tmp_path: Path) -> None:
    done = refused_at_start("--host", "0.0.0.0", env=base_env(), tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert "will not listen on 0.0.0.0 unauthenticated" in done.stderr
    assert "TOOLWIRE_TOKENS" in done.stderr and "127.0.0.1" in done.stderr
    http_only = refused_at_start("--http-host", "0.0.0.0", env=base_env(), tmp_path=tmp_path)
    assert http_only.returncode == 2, http_only
    assert "will not listen on 0.0.0.0 unauthenticated" in http_only.stderr


@pytest.mark.parametrize(
    ("text", "place", "says"),
    [
        (
            '[[auth.tokens]]\nprincipal = "agent"\nscopes = ["dispatch"]\n'
            'token_env = "E2E_AGENT_TOKEN"\ncolour = "red"\n',
            "auth.tokens[0].colour",
            "not a known setting",
        ),
        (
            '[policies.agents]\nallow_tiers = ["read_only", "dangerous"]\n',
            "policies.agents.allow_tiers[1]",
            "'privileged'",
        ),
        (
            '[[auth.tokens]]\nprincipal = "agent"\nscopes = ["root"]\n'
            'token_env = "E2E_AGENT_TOKEN"\n',
            "auth.tokens[0].scopes[0]",
            "'dispatch'",
        ),
        (
            '[[auth.tokens]]\nprincipal = "agent"\nscopes = ["dispatch"]\n'
            'token_env = "E2E_UNSET_TOKEN"\n',
            "auth.tokens[0]",
            "$E2E_UNSET_TOKEN, which is unset or empty",
        ),
        ('[audit]\narguments = "everything"\n', "audit.arguments", "'redact'"),
        ("[audit\nenabled = true\n", "line 1", "not valid TOML"),
    ],
    ids=["unknown-key", "tier", "scope", "token-env-unset", "audit-mode", "toml"],
)
def test_a_bad_configuration_is_refused_with_its_place(
    tmp_path: Path, text: str, place: str, says: str
) -> None:
    config = write_config(tmp_path, text)
    env = {k: v for k, v in token_env().items() if k != "E2E_UNSET_TOKEN"}
    done = refused_at_start("--config", str(config), env=env, tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert place in done.stderr, done.stderr
    assert says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "audit.sqlite").exists()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--tls-cert", "{cert}"), "TLS needs both a certificate (--tls-cert) and a key"),
        (("--tls-key", "{key}"), "TLS needs both a certificate (--tls-cert) and a key"),
        (("--tls-client-ca", "{ca}"), "a TLS client CA needs a server certificate and key"),
        (("--tls-cert", "{missing}", "--tls-key", "{key}"), "cannot read the TLS certificate"),
    ],
    ids=["cert-only", "key-only", "client-ca-only", "missing-cert"],
)
def test_incomplete_tls_settings_are_refused(
    tmp_path: Path, pki: Pki, flags: tuple[str, ...], says: str
) -> None:
    paths = {
        "cert": str(pki.server_cert),
        "key": str(pki.server_key),
        "ca": str(pki.client_ca),
        "missing": str(tmp_path / "nope.pem"),
    }
    done = refused_at_start(*(f.format(**paths) for f in flags), env=base_env(), tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_development_mode_warns_loudly_at_start(launch: Launch) -> None:
    served = launch()  # no config, no tokens, loopback
    with ToolwireClient(served.target, timeout=WAIT) as anonymous:
        assert anonymous.dispatch("add", {"a": 1, "b": 2}).output == "3"
    assert stop(served) == 0
    output = served.output()
    assert "DEVELOPMENT MODE: no tokens are configured." in output
    assert "WARNING" in output


# -- audit ------------------------------------------------------------------------------

SECRETS = ("hunter2-in-text", "s3cr3t-api-key", "hunter2-in-invalid")


def test_dispatches_of_two_principals_are_audited_with_arguments_redacted(
    launch: Launch, tmp_path: Path
) -> None:
    config = write_config(tmp_path, TOKENS_CONFIG)
    served = launch("--config", str(config), env=token_env())
    with (
        ToolwireClient(served.target, token=OPS_TOKEN, timeout=WAIT) as ops,
        ToolwireClient(served.target, token=AGENT_TOKEN, timeout=WAIT) as agent,
    ):
        assert ops.dispatch("add", {"a": 2, "b": 3}).output == "5"
        shouted = ops.dispatch("shout", {"text": SECRETS[0], "style": "upper"})
        assert shouted.output == SECRETS[0].upper()
        denied = agent.dispatch("shout", {"text": SECRETS[1]})
        assert denied.error_code is ErrorCode.DENIED_BY_POLICY
        assert denied.policy_rule == "policies.agents.deny[0]"
        invalid = agent.dispatch("add", {"a": SECRETS[2], "b": 1})
        assert invalid.error_code is ErrorCode.INVALID_ARGUMENTS
    assert stop(served) == 0  # a clean stop flushes the audit writer

    done = subprocess.run(
        [TOOLWIRE, "audit", "--data-dir", str(served.data_dir), "--json"],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )
    assert done.returncode == 0, done
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    seen = [
        (e["principal"], e["tool"], e["decision"], e["rule"], e["success"], e["error_code"])
        for e in reversed(entries)  # newest first
    ]
    assert seen == [
        ("ops", "add", "allowed", "", True, ""),
        ("ops", "shout", "allowed", "", True, ""),
        ("agent", "shout", "denied", "policies.agents.deny[0]", False, "denied_by_policy"),
        ("agent", "add", "invalid", "", False, "invalid_arguments"),
    ]
    for entry in entries:
        assert entry["arguments_digest"].startswith("sha256:")
        assert entry["duration_seconds"] >= 0
    # Redacted by default: the keys stay, the values do not.
    by_call = {(e["principal"], e["tool"]): json.loads(e["arguments"]) for e in entries}
    assert set(by_call[("ops", "shout")]) == {"text", "style"}
    assert set(by_call[("agent", "shout")]) == {"text"}
    assert set(by_call[("agent", "add")]) == {"a", "b"}
    assert not any(secret in done.stdout for secret in SECRETS)
    # Nor is any value anywhere in the audit files' bytes (the database and its journal).
    files = sorted(served.data_dir.glob("audit.sqlite*"))
    assert files, list(served.data_dir.iterdir())
    for path in files:
        raw = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in raw, (path.name, secret)
    # The digest still tells identical calls apart from different ones.
    digests = {e["arguments_digest"] for e in entries}
    assert len(digests) == len(entries)


def test_full_audit_arguments_keep_values_the_default_leaves_out(
    launch: Launch, tmp_path: Path
) -> None:
    """The control for the test above: with `arguments = "full"` the same
    search of the audit files does find the value, so its absence there means
    redaction, not a search that cannot find anything. Secret-looking keys
    stay masked even in full mode."""
    config = write_config(tmp_path, TOKENS_CONFIG + '\n[audit]\narguments = "full"\n')
    served = launch("--config", str(config), env=token_env())
    with ToolwireClient(served.target, token=OPS_TOKEN, timeout=WAIT) as ops:
        assert ops.dispatch("shout", {"text": SECRETS[0]}).success
        # An unknown key fails validation but is still audited: its value must be masked.
        assert not ops.dispatch("add", {"a": 1, "b": 2, "api_key": SECRETS[1]}).success
    assert stop(served) == 0
    raw = b"".join(p.read_bytes() for p in sorted(served.data_dir.glob("audit.sqlite*")))
    assert SECRETS[0].encode() in raw
    assert SECRETS[1].encode() not in raw
