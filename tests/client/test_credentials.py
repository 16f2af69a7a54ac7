"""The bearer token and TLS as the server sees them.

A recording server (a generic handler for `toolwire.v1.RegistryService` on a
real `grpc.aio.server()`, loopback, port 0) notes the metadata of every call,
unary and streaming, so the tests show what actually travels: the header
`authorization: Bearer <token>` on each call, once, whether the token rides
in call metadata (plain channel) or in call credentials (TLS). The TLS
certificate is made in the test by the `openssl` command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire_client import AsyncToolwireClient, ToolwireClient, ToolwireRpcError
from toolwire_client._channel import Connection

SERVICE = "toolwire.v1.RegistryService"
TOKEN = "tw-test-token-123"
BEARER = f"Bearer {TOKEN}"
SERVER_NAME = "localhost"


@dataclass
class Recorder:
    """What each call's metadata said, by method, in arrival order."""

    calls: list[tuple[str, tuple[tuple[str, Any], ...]]] = field(default_factory=list)

    def note(self, method: str, context: Any) -> None:
        self.calls.append((method, tuple(context.invocation_metadata())))

    def authorization(self) -> dict[str, list[str]]:
        """The `authorization` values each method received (one list per method, all calls)."""
        seen: dict[str, list[str]] = {}
        for method, metadata in self.calls:
            values = seen.setdefault(method, [])
            values.extend(str(v) for k, v in metadata if k == "authorization")
        return seen

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]

    def handler(self) -> grpc.GenericRpcHandler:
        async def list_(request: rpb.ListRequest, context: Any) -> rpb.ListResponse:
            self.note("List", context)
            return rpb.ListResponse()

        async def watch(request: rpb.WatchRequest, context: Any) -> AsyncIterator[Any]:
            self.note("Watch", context)
            yield rpb.WatchResponse(kind=rpb.REGISTRY_EVENT_KIND_SYNCED, registry_version=1)

        async def watch_approvals(
            request: rpb.WatchApprovalsRequest, context: Any
        ) -> AsyncIterator[Any]:
            self.note("WatchApprovals", context)
            response = rpb.WatchApprovalsResponse()
            response.ticket.ticket_id = "t-1"
            yield response

        async def provide(
            requests: AsyncIterator[rpb.ProvideRequest], context: Any
        ) -> AsyncIterator[Any]:
            self.note("Provide", context)
            hello = (await anext(aiter(requests))).hello
            yield rpb.ProvideResponse(
                accepted=rpb.ProviderAccepted(provider_id="prov-1", tools=hello.tools)
            )
            async for _ in requests:  # until the provider half-closes
                pass

        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "List": grpc.unary_unary_rpc_method_handler(
                    list_,
                    request_deserializer=rpb.ListRequest.FromString,
                    response_serializer=rpb.ListResponse.SerializeToString,
                ),
                "Watch": grpc.unary_stream_rpc_method_handler(
                    watch,
                    request_deserializer=rpb.WatchRequest.FromString,
                    response_serializer=rpb.WatchResponse.SerializeToString,
                ),
                "WatchApprovals": grpc.unary_stream_rpc_method_handler(
                    watch_approvals,
                    request_deserializer=rpb.WatchApprovalsRequest.FromString,
                    response_serializer=rpb.WatchApprovalsResponse.SerializeToString,
                ),
                "Provide": grpc.stream_stream_rpc_method_handler(
                    provide,
                    request_deserializer=rpb.ProvideRequest.FromString,
                    response_serializer=rpb.ProvideResponse.SerializeToString,
                ),
            },
        )


@dataclass(frozen=True)
class Certificate:
    chain: bytes
    key: bytes


@dataclass(frozen=True)
class Running:
    recorder: Recorder
    target: str


ServerFactory = Callable[
    [grpc.ServerCredentials | None], contextlib.AbstractAsyncContextManager[Running]
]


@pytest.fixture
def serve() -> ServerFactory:
    """Starts a recording server: plain, or TLS with the credentials given."""

    @contextlib.asynccontextmanager
    async def start(credentials: grpc.ServerCredentials | None) -> AsyncIterator[Running]:
        recorder = Recorder()
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((recorder.handler(),))
        address = "127.0.0.1:0"
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
        await server.start()
        try:
            yield Running(recorder, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    return start


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    """A self-signed certificate for "localhost", made by openssl (which the
    machine image ships: its absence is a failure, not a reason to skip)."""
    key, chain = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(chain), "-days", "2",
         "-subj", f"/CN={SERVER_NAME}", "-addext", f"subjectAltName=DNS:{SERVER_NAME}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return Certificate(chain.read_bytes(), key.read_bytes())


@pytest.fixture
def no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_TOKEN", raising=False)


async def ping() -> str:
    """Answers pong."""
    return "pong"


def use_sync(client: ToolwireClient) -> None:
    """One unary call and both server streams, each stream read to its first message."""
    client.list()
    list(itertools.islice(client.watch(), 1))
    list(itertools.islice(client.watch_approvals(), 1))


async def use_async(client: AsyncToolwireClient) -> None:
    """One unary call, both server streams and a Provide stream."""
    await client.list()
    async with contextlib.aclosing(client.watch()) as events:
        await anext(events)
    async with contextlib.aclosing(client.watch_approvals()) as tickets:
        await anext(tickets)
    async with client.provide([ping]):
        pass


def run_sync(make: Callable[[], ToolwireClient]) -> Any:
    """Runs the blocking client off the event loop that serves it."""

    def body() -> None:
        with make() as client:
            use_sync(client)

    return asyncio.to_thread(body)


SYNC_METHODS = ["List", "Watch", "WatchApprovals"]
ASYNC_METHODS = ["List", "Watch", "WatchApprovals", "Provide"]


async def test_sync_client_sends_the_token_on_unary_calls_and_streams(
    serve: ServerFactory, no_env_token: None
) -> None:
    async with serve(None) as running:
        await run_sync(lambda: ToolwireClient(running.target, token=TOKEN, timeout=10))

    assert running.recorder.methods() == SYNC_METHODS
    assert running.recorder.authorization() == {m: [BEARER] for m in SYNC_METHODS}


async def test_async_client_and_its_provider_send_the_token(
    serve: ServerFactory, no_env_token: None
) -> None:
    async with (
        serve(None) as running,
        AsyncToolwireClient(running.target, token=TOKEN, timeout=10) as client,
    ):
        await use_async(client)

    assert running.recorder.methods() == ASYNC_METHODS
    assert running.recorder.authorization() == {m: [BEARER] for m in ASYNC_METHODS}


async def test_the_token_defaults_to_toolwire_token_from_the_environment(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN", TOKEN)
    async with serve(None) as running:
        await run_sync(lambda: ToolwireClient(running.target, timeout=10))
        async with AsyncToolwireClient(running.target, timeout=10) as client:
            await use_async(client)

    assert running.recorder.authorization() == {
        "List": [BEARER, BEARER],
        "Watch": [BEARER, BEARER],
        "WatchApprovals": [BEARER, BEARER],
        "Provide": [BEARER],
    }


async def test_without_a_token_no_authorization_is_sent(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN", TOKEN)  # token="" overrides the environment
    async with serve(None) as running:
        await run_sync(lambda: ToolwireClient(running.target, token="", timeout=10))
        async with AsyncToolwireClient(running.target, token="", timeout=10) as client:
            await use_async(client)

    assert running.recorder.methods() == SYNC_METHODS + ASYNC_METHODS
    assert all(values == [] for values in running.recorder.authorization().values())


async def test_an_authorization_in_metadata_wins_over_the_environment(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN", "from-env")
    metadata = [("authorization", BEARER)]
    async with serve(None) as running:
        await run_sync(lambda: ToolwireClient(running.target, metadata=metadata, timeout=10))

    assert running.recorder.authorization() == {m: [BEARER] for m in SYNC_METHODS}


def test_the_token_is_given_one_way_only_and_tls_needs_the_clients_own_channel() -> None:
    with pytest.raises(ValueError, match="either"):
        ToolwireClient(token=TOKEN, metadata=[("Authorization", "Bearer other")])
    with grpc.insecure_channel("127.0.0.1:1") as channel, pytest.raises(ValueError, match="TLS"):
        ToolwireClient(channel=channel, tls=True)


def test_the_connection_settings_keep_secrets_out_of_their_repr(certificate: Certificate) -> None:
    connection = Connection.resolve(
        "127.0.0.1:1",
        channel=None,
        metadata=(),
        token=TOKEN,
        tls=False,
        root_certificates=None,
        client_certificate=(certificate.chain, certificate.key),
        server_name_override=None,
        max_message_bytes=1024,
    )

    assert connection.tls  # a client certificate implies TLS
    assert TOKEN not in repr(connection)
    assert "PRIVATE KEY" not in repr(connection)


async def test_tls_round_trips_with_the_root_certificate_and_the_token_arrives_once(
    serve: ServerFactory, certificate: Certificate, no_env_token: None
) -> None:
    credentials = grpc.ssl_server_credentials([(certificate.key, certificate.chain)])
    tls: dict[str, Any] = {
        "token": TOKEN,
        "tls": True,
        "root_certificates": certificate.chain,
        "server_name_override": SERVER_NAME,
        "timeout": 10,
    }
    async with serve(credentials) as running:
        await run_sync(lambda: ToolwireClient(running.target, **tls))
        async with AsyncToolwireClient(running.target, **tls) as client:
            await use_async(client)

    assert running.recorder.methods() == SYNC_METHODS + ASYNC_METHODS
    assert running.recorder.authorization() == {
        "List": [BEARER, BEARER],
        "Watch": [BEARER, BEARER],
        "WatchApprovals": [BEARER, BEARER],
        "Provide": [BEARER],
    }


async def test_mutual_tls_presents_the_client_certificate(
    serve: ServerFactory, certificate: Certificate, no_env_token: None
) -> None:
    credentials = grpc.ssl_server_credentials(
        [(certificate.key, certificate.chain)],
        root_certificates=certificate.chain,
        require_client_auth=True,
    )
    async with serve(credentials) as running:
        async with AsyncToolwireClient(
            running.target,
            root_certificates=certificate.chain,
            client_certificate=(certificate.chain, certificate.key),
            server_name_override=SERVER_NAME,
            timeout=10,
        ) as client:
            await client.list()
        async with AsyncToolwireClient(
            running.target,
            root_certificates=certificate.chain,
            server_name_override=SERVER_NAME,
            timeout=10,
        ) as client:
            with pytest.raises(ToolwireRpcError) as refused:
                await client.list()

    assert running.recorder.methods() == ["List"]
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE


async def test_a_client_that_does_not_trust_the_certificate_is_unavailable(
    serve: ServerFactory, certificate: Certificate, no_env_token: None
) -> None:
    credentials = grpc.ssl_server_credentials([(certificate.key, certificate.chain)])

    def sync_list(target: str) -> None:
        with ToolwireClient(
            target, tls=True, server_name_override=SERVER_NAME, token=TOKEN, timeout=10
        ) as client:
            client.list()

    async with serve(credentials) as running:
        with pytest.raises(ToolwireRpcError) as sync_refused:
            await asyncio.to_thread(sync_list, running.target)
        async with AsyncToolwireClient(
            running.target, tls=True, server_name_override=SERVER_NAME, token=TOKEN, timeout=10
        ) as client:
            with pytest.raises(ToolwireRpcError) as async_refused:
                await client.list()

    assert sync_refused.value.code == grpc.StatusCode.UNAVAILABLE
    assert async_refused.value.code == grpc.StatusCode.UNAVAILABLE
    assert running.recorder.calls == []  # no call got past the handshake
