"""The HTTP listener on the wire, with plain HTTP requests: gRPC-web framing
(every response ends with a trailer frame carrying grpc-status, never
trailers-only), Connect JSON as curl would send it, size limits, CORS."""

from __future__ import annotations

import base64
import json
import struct
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from toolwire.capabilities import Capabilities, RunGrant
from toolwire.registry import ToolRegistry
from toolwire.server import HttpServer, ServerConfig, ToolwireServers
from toolwire.transport.connect_app import GrpcWebTrailerFrames, trailer_frame
from toolwire.v1 import registry_service_pb2 as rpb
from toolwire.v1 import tool_pb2 as pb

Issue = Callable[..., tuple[str, RunGrant]]
SERVICE = "/toolwire.v1.RegistryService"
GRPC_WEB = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}


@pytest.fixture
async def http(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


def envelope(message: Message | bytes, flags: int = 0) -> bytes:
    data = message if isinstance(message, bytes) else message.SerializeToString()
    return struct.pack(">BI", flags, len(data)) + data


def frames(body: bytes) -> list[tuple[int, bytes]]:
    out, i = [], 0
    while i < len(body):
        assert len(body) - i >= 5, f"truncated frame header in {body!r}"
        flags, size = struct.unpack(">BI", body[i : i + 5])
        assert len(body) - i - 5 >= size, f"truncated frame in {body!r}"
        out.append((flags, body[i + 5 : i + 5 + size]))
        i += 5 + size
    return out


def grpc_web_outcome(response: httpx.Response) -> tuple[list[bytes], dict[str, str]]:
    """The messages and the trailer of a gRPC-web response, asserting the shape
    Connect-ES needs: HTTP 200, no status in the headers, and a body that ends
    with exactly one trailer frame, which carries grpc-status."""
    assert response.status_code == 200
    assert "grpc-status" not in response.headers, "trailers-only response"
    parsed = frames(response.content)
    assert parsed, "empty body: no trailer frame"
    *messages, (last_flags, last) = parsed
    assert last_flags == 0x80, "the body must end with a trailer frame"
    assert all(flags == 0 for flags, _ in messages)
    trailer = {}
    for line in last.decode().split("\r\n"):
        if line:
            key, _, value = line.partition(":")
            trailer[key.strip().lower()] = value.strip()
    assert "grpc-status" in trailer
    return [m for _, m in messages], trailer


def error_reason(trailer: dict[str, str]) -> str:
    raw = trailer["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info.reason


async def test_grpc_web_success_ends_with_a_status_trailer(
    http: httpx.AsyncClient, issue: Issue
) -> None:
    token, _ = issue()
    response = await http.post(
        f"{SERVICE}/Dispatch",
        content=envelope(rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 2}')),
        headers={**GRPC_WEB, "authorization": f"Bearer {token}"},
    )
    (message,), trailer = grpc_web_outcome(response)
    assert trailer["grpc-status"] == "0"
    assert rpb.DispatchResponse.FromString(message).result.output == "3"


@pytest.mark.parametrize(
    ("method", "request_message", "headers", "status", "reason"),
    [
        ("Dispatch", rpb.DispatchRequest(name="add"), {}, "16", "TOKEN_MISSING"),
        (
            "Dispatch",
            rpb.DispatchRequest(name="add"),
            {"authorization": "Bearer wrong"},
            "16",
            "TOKEN_INVALID",
        ),
        ("Register", rpb.RegisterRequest(), {"authorization": "TOKEN"}, "7", "SCOPE_MISSING"),
        (
            "GenerateStubs",
            rpb.GenerateStubsRequest(names=["execute_code"]),
            {"authorization": "TOKEN"},
            "7",
            "DENIED_BY_POLICY",
        ),
        (
            "GenerateStubs",
            rpb.GenerateStubsRequest(names=["ghost"]),
            {"authorization": "TOKEN"},
            "5",
            "TOOL_NOT_FOUND",
        ),
        ("Provide", rpb.ProvideRequest(), {"authorization": "TOKEN"}, "12", None),
        # Rejected by connectrpc before it starts a response stream, which it
        # answers trailers-only; GrpcWebTrailerFrames moves the status into the body.
        (
            "Dispatch",
            rpb.DispatchRequest(name="add"),
            {"authorization": "TOKEN", "grpc-timeout": "1X"},
            "3",
            None,
        ),
    ],
)
async def test_grpc_web_errors_end_with_a_status_trailer_never_trailers_only(
    http: httpx.AsyncClient,
    issue: Issue,
    method: str,
    request_message: Message,
    headers: dict[str, str],
    status: str,
    reason: str | None,
) -> None:
    token, _ = issue()
    if headers.get("authorization") == "TOKEN":
        headers = {**headers, "authorization": f"Bearer {token}"}
    response = await http.post(
        f"{SERVICE}/{method}", content=envelope(request_message), headers={**GRPC_WEB, **headers}
    )
    messages, trailer = grpc_web_outcome(response)
    assert messages == []
    assert trailer["grpc-status"] == status
    assert urllib.parse.unquote(trailer["grpc-message"])
    if reason is not None:
        assert error_reason(trailer) == reason


async def test_provide_points_providers_to_the_grpc_listener(
    http: httpx.AsyncClient, issue: Issue
) -> None:
    token, _ = issue()
    response = await http.post(
        f"{SERVICE}/Provide",
        content=envelope(rpb.ProvideRequest(hello=rpb.ProviderHello(provider_name="p"))),
        headers={**GRPC_WEB, "authorization": f"Bearer {token}"},
    )
    _, trailer = grpc_web_outcome(response)
    assert trailer["grpc-status"] == "12"
    message = urllib.parse.unquote(trailer["grpc-message"])
    assert "gRPC listener" in message and "HTTP/2" in message


async def test_grpc_web_oversize_request(
    http: httpx.AsyncClient, issue: Issue, max_message_bytes: int
) -> None:
    token, grant = issue()
    big = rpb.DispatchRequest(name="text_stats", arguments_json="x" * max_message_bytes)
    response = await http.post(
        f"{SERVICE}/Dispatch",
        content=envelope(big),
        headers={**GRPC_WEB, "authorization": f"Bearer {token}"},
    )
    _, trailer = grpc_web_outcome(response)
    assert trailer["grpc-status"] == "8"  # RESOURCE_EXHAUSTED
    assert grant.calls == []


async def test_trailer_frames_wrapper_rewrites_a_trailers_only_response() -> None:
    """Whatever the inner app answers trailers-only leaves as headers + trailer frame."""

    async def trailers_only(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/grpc-web"),
                    (b"grpc-status", b"16"),
                    (b"grpc-message", b"no%20token"),
                    (b"x-other", b"kept"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    transport = httpx.ASGITransport(app=GrpcWebTrailerFrames(trailers_only))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post("/x", content=b"", headers=GRPC_WEB)
        plain = await client.post("/x", content=b"", headers={"content-type": "application/json"})
    _, trailer = grpc_web_outcome(response)
    assert trailer == {"grpc-status": "16", "grpc-message": "no%20token"}
    assert response.headers["x-other"] == "kept"
    assert response.content.endswith(
        trailer_frame([(b"grpc-status", b"16"), (b"grpc-message", b"no%20token")])
    )
    # Other protocols pass through untouched.
    assert plain.headers["grpc-status"] == "16" and plain.content == b""


async def test_native_grpc_is_pointed_to_the_grpc_listener(http: httpx.AsyncClient) -> None:
    response = await http.post(
        f"{SERVICE}/List",
        content=envelope(rpb.ListRequest()),
        headers={"content-type": "application/grpc"},
    )
    assert response.status_code == 415
    assert "gRPC listener" in response.text


async def test_connect_json_as_curl_sends_it(http: httpx.AsyncClient, issue: Issue) -> None:
    token, _ = issue()
    response = await http.post(
        f"{SERVICE}/Dispatch",
        json={"name": "text_stats", "argumentsJson": json.dumps({"text": "hello big world"})},
        headers={"authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["success"] is True
    assert result["structuredOutput"] == {
        "length": 15,
        "words": ["hello", "big", "world"],
        "upper": "HELLO BIG WORLD",
    }
    denied = await http.post(f"{SERVICE}/List", json={})
    assert denied.status_code == 401
    body = denied.json()
    assert body["code"] == "unauthenticated"
    assert body["details"][0]["type"] == "google.rpc.ErrorInfo"


async def test_connect_oversize_request(
    http: httpx.AsyncClient, issue: Issue, max_message_bytes: int
) -> None:
    token, _ = issue()
    response = await http.post(
        f"{SERVICE}/Dispatch",
        json={"name": "text_stats", "argumentsJson": "x" * max_message_bytes},
        headers={"authorization": f"Bearer {token}"},
    )
    assert response.status_code == 429  # Connect's HTTP status for resource_exhausted
    assert response.json()["code"] == "resource_exhausted"


PREFLIGHT = {
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization,content-type,x-grpc-web,x-user-agent",
}


async def test_cors_preflight_from_an_allowed_origin(
    http: httpx.AsyncClient, allowed_origin: str
) -> None:
    response = await http.options(
        f"{SERVICE}/Dispatch", headers={"origin": allowed_origin, **PREFLIGHT}
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == allowed_origin
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed = {h.strip() for h in response.headers["access-control-allow-headers"].split(",")}
    assert {
        "authorization",
        "content-type",
        "x-grpc-web",
        "x-user-agent",
        "grpc-timeout",
    } <= allowed
    assert {"connect-protocol-version", "connect-timeout-ms"} <= allowed
    assert "access-control-allow-credentials" not in response.headers


async def test_cors_refuses_other_origins(http: httpx.AsyncClient) -> None:
    preflight = await http.options(
        f"{SERVICE}/Dispatch", headers={"origin": "https://evil.example", **PREFLIGHT}
    )
    assert preflight.status_code == 403
    assert "access-control-allow-origin" not in preflight.headers
    actual = await http.post(f"{SERVICE}/List", json={}, headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in actual.headers


async def test_cors_exposes_grpc_status_to_allowed_origins(
    http: httpx.AsyncClient, issue: Issue, allowed_origin: str
) -> None:
    token, _ = issue()
    response = await http.post(
        f"{SERVICE}/Dispatch",
        content=envelope(rpb.DispatchRequest(name="add", arguments_json='{"a": 1, "b": 1}')),
        headers={**GRPC_WEB, "origin": allowed_origin, "authorization": f"Bearer {token}"},
    )
    assert response.headers["access-control-allow-origin"] == allowed_origin
    exposed = {h.strip() for h in response.headers["access-control-expose-headers"].split(",")}
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= exposed
    assert response.headers["vary"] == "origin"
    _, trailer = grpc_web_outcome(response)
    assert trailer["grpc-status"] == "0"
    no_origin = await http.post(f"{SERVICE}/List", json={})
    assert "access-control-allow-origin" not in no_origin.headers


async def test_cors_is_off_by_default(issue: Issue) -> None:
    registry = ToolRegistry()
    server = HttpServer(registry, Capabilities(), ServerConfig(http_port=0, grace_seconds=0))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            preflight = await client.options(
                f"{SERVICE}/List", headers={"origin": "https://app.example", **PREFLIGHT}
            )
            actual = await client.post(
                f"{SERVICE}/List", json={}, headers={"origin": "https://app.example"}
            )
    finally:
        await server.stop(0)
        registry.close()
    assert preflight.status_code >= 400
    assert "access-control-allow-origin" not in preflight.headers
    assert actual.status_code == 401
    assert "access-control-allow-origin" not in actual.headers


async def test_servers_share_one_registry_and_capabilities(servers: ToolwireServers) -> None:
    assert servers.grpc.registry is servers.http.registry is servers.registry
    assert servers.http.capabilities is servers.capabilities
    assert servers.grpc.hub is servers.hub
    assert servers.http.port not in (0, servers.grpc.port)
    assert servers.http_base_url == f"http://127.0.0.1:{servers.http.port}"


async def test_http_port_in_use_is_an_os_error(servers: ToolwireServers) -> None:
    config = ServerConfig(http_port=servers.http.port)
    with pytest.raises(OSError, match="could not listen"):
        await HttpServer(servers.registry, servers.capabilities, config).start()


def test_base_url_of_a_wildcard_address_is_loopback() -> None:
    registry = ToolRegistry()
    for host, expected in [
        ("0.0.0.0", "127.0.0.1"),
        ("::", "[::1]"),
        ("::1", "[::1]"),
        ("localhost", "localhost"),
    ]:
        server = HttpServer(registry, Capabilities(), ServerConfig(host=host))
        assert server.host == expected
    server = HttpServer(
        registry, Capabilities(), ServerConfig(host="0.0.0.0", http_host="127.0.0.2")
    )
    assert server.host == "127.0.0.2"
    registry.close()


async def test_wire_result_matches_the_grpc_servicer_translation(
    http: httpx.AsyncClient, issue: Issue
) -> None:
    """Same core, same mapping: a list reply over gRPC-web carries both schema forms."""
    token, _ = issue(allowed=frozenset({"add"}))
    response = await http.post(
        f"{SERVICE}/List",
        content=envelope(rpb.ListRequest()),
        headers={**GRPC_WEB, "authorization": f"Bearer {token}"},
    )
    (message,), _ = grpc_web_outcome(response)
    (tool,) = rpb.ListResponse.FromString(message).tools
    assert tool.name == "add" and tool.group == "math"
    assert [p.name for p in tool.parameters] == ["a", "b"]
    assert tool.parameters[0].type == pb.PARAMETER_TYPE_INTEGER
