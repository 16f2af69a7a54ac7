"""http_fetch through the registry, against a real HTTP server on loopback that
the tests start: methods, headers, bodies, caps, redirects, timeouts and the
address policy."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from toolwire.builtin.http import http_tools
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.web import AddressPolicy

# --- a scripted HTTP server on 127.0.0.1 ------------------------------------


Site = Any  # the `site` and `make_site` fixtures of conftest.py
Route = Callable[[Any], None]


LOCAL = AddressPolicy(["127.0.0.1", "localhost"])


def registry(policy: AddressPolicy = LOCAL, **options: Any) -> ToolRegistry:
    limits: dict[str, Any] = {"timeout": 3.0, "connect_timeout": 1.0, "read_timeout": 2.0}
    tools = ToolRegistry(default_timeout=10)
    for t in http_tools(policy, **{**limits, **options}):
        tools.register(t)
    return tools


async def call(tools: ToolRegistry, url: str, **arguments: Any) -> ToolResult:
    return await tools.dispatch("http_fetch", {"url": url, **arguments})


@pytest.fixture
def echo_site(site: Site) -> Site:
    """`/echo` answers with the request it got, as JSON, and headers to filter."""

    def echo(h: BaseHTTPRequestHandler) -> None:
        last = site.seen[-1]
        seen = {"method": last.method, "headers": last.headers, "body": last.body.decode()}
        h.reply(
            200,
            json.dumps(seen).encode(),
            "application/json",
            {"Set-Cookie": "session=secret", "ETag": '"v1"', "X-Internal-Debug": "yes"},
        )

    site.routes["/echo"] = echo
    return site


def test_http_fetch_is_defined() -> None:
    definition = registry().get("http_fetch")
    assert definition is not None
    assert (definition.safety_tier, definition.group) == (SafetyTier.SIDE_EFFECTING, "net")
    schema = definition.input_schema
    assert schema is not None
    assert schema["required"] == ["url"]
    assert schema["properties"]["method"]["enum"] == [
        "GET",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
        "HEAD",
    ]


async def test_get_returns_status_safe_headers_and_body(echo_site: Site) -> None:
    result = await call(registry(), echo_site.url("/echo"))
    assert result.success, result.error
    head, _, body = result.output.partition("\n\n")
    assert head.splitlines()[0] == "HTTP 200 OK"
    assert "content-type: application/json" in head
    assert 'etag: "v1"' in head
    assert "secret" not in result.output and "x-internal-debug" not in result.output.lower()
    assert json.loads(body)["method"] == "GET"
    data = result.structured_output
    assert data["status"] == 200
    assert set(data["headers"]) == {"content-type", "content-length", "etag", "date"}
    assert data["headers"]["etag"] == '"v1"'
    assert json.loads(data["body"])["method"] == "GET"
    assert data["body_truncated"] is False


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_methods_send_their_body_and_headers(echo_site: Site, method: str) -> None:
    result = await call(
        registry(),
        echo_site.url("/echo"),
        method=method,
        headers={"Content-Type": "application/json", "X-Token": "abc"},
        body='{"name": "tool"}',
    )
    assert result.success, result.error
    seen = json.loads(result.structured_output["body"])
    assert seen["method"] == method
    assert seen["headers"]["x-token"] == "abc"
    assert seen["headers"]["content-type"] == "application/json"
    assert seen["body"] == '{"name": "tool"}'


async def test_head_has_no_body(echo_site: Site) -> None:
    result = await call(registry(), echo_site.url("/echo"), method="HEAD")
    assert result.success
    assert result.output.startswith("HTTP 200 OK\n")
    assert "\n\n" not in result.output
    assert echo_site.seen[-1].method == "HEAD"


async def test_error_statuses_are_answers(site: Site) -> None:
    site.routes["/broken"] = lambda h: h.reply(500, b"database down", "text/plain")
    result = await call(registry(), site.url("/broken"))
    assert result.success
    assert result.output.startswith("HTTP 500 Internal Server Error\n")
    assert result.output.endswith("\n\ndatabase down")
    assert result.structured_output["status"] == 500


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"method": "TRACE"}, "'method' must be one of GET, POST, PUT, PATCH, DELETE, HEAD"),
        ({"method": "GET", "body": "x"}, "a GET request has no body"),
        ({"headers": {"Host": "other.example"}}, "header 'Host' cannot be set"),
        ({"headers": {"Content-Length": "5"}}, "header 'Content-Length' cannot be set"),
        ({"headers": {"X-A": "1\r\nX-Injected: 1"}}, "has a line break or NUL byte"),
        ({"headers": {"Bad Name": "1"}}, "is not a valid HTTP header name"),
        ({"headers": {"X-A": 1}}, "'headers.X-A' must be a string"),
        ({"url": "ftp://example.com/"}, "is not an http(s) URL (scheme 'ftp:')"),
        ({"url": "file:///etc/passwd"}, "is not an http(s) URL (scheme 'file:')"),
    ],
)
async def test_bad_arguments_are_invalid(
    site: Site, arguments: dict[str, Any], message: str
) -> None:
    result = await call(registry(), **{"url": site.url("/echo"), **arguments})
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS, result
    assert message in result.error
    assert site.seen == []


async def test_long_bodies_are_cut_and_say_so(site: Site) -> None:
    site.routes["/long"] = lambda h: h.reply(200, b"a" * 5000, "text/plain")
    site.routes["/huge"] = lambda h: h.reply(200, b"b" * 200_000, "text/plain")
    cut = await call(registry(max_body_chars=100), site.url("/long"))
    assert cut.success
    assert cut.output.endswith(
        "\n\n" + "a" * 100 + "\n\n[body truncated: showing 100 of 5,000 characters]"
    )
    assert cut.structured_output["body_truncated"] is True
    capped = await call(registry(max_bytes=1024, max_body_chars=5000), site.url("/huge"))
    assert capped.output.endswith("b" * 1024 + "\n\n[body over 1,024 bytes: stopped reading there]")
    assert capped.structured_output["body_truncated"] is True


async def test_a_binary_body_is_described_not_shown(site: Site) -> None:
    site.routes["/logo.png"] = lambda h: h.reply(
        200, b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png"
    )
    result = await call(registry(), site.url("/logo.png"))
    assert result.success
    assert result.output.endswith("\n\n[binary body: 108 bytes of image/png, not shown]")
    assert result.structured_output["binary"] is True
    assert result.structured_output["body"] is None


async def test_redirects_keep_or_change_the_method_like_browsers(echo_site: Site) -> None:
    echo_site.routes["/307"] = lambda h: h.reply(307, b"", None, {"Location": "/echo"})
    echo_site.routes["/303"] = lambda h: h.reply(303, b"", None, {"Location": "/echo"})
    other_origin = f"http://localhost:{echo_site.port}/echo"
    echo_site.routes["/away"] = lambda h: h.reply(302, b"", None, {"Location": other_origin})
    tools = registry()
    kept = await call(tools, echo_site.url("/307"), method="POST", body="payload")
    seen = json.loads(kept.structured_output["body"])
    assert (seen["method"], seen["body"]) == ("POST", "payload")
    assert kept.output.splitlines()[1] == f"URL: {echo_site.url('/echo')} (after 1 redirect(s))"
    changed = await call(tools, echo_site.url("/303"), method="POST", body="payload")
    seen = json.loads(changed.structured_output["body"])
    assert (seen["method"], seen["body"]) == ("GET", "")
    away = await call(
        tools, echo_site.url("/away"), headers={"Authorization": "Bearer t", "X-Keep": "1"}
    )
    seen = json.loads(away.structured_output["body"])
    assert "authorization" not in seen["headers"]  # not sent to another origin
    assert seen["headers"]["x-keep"] == "1"
    assert seen["headers"]["host"] == f"localhost:{echo_site.port}"


async def test_the_address_policy_applies(site: Site) -> None:
    site.routes["/echo"] = lambda h: h.reply(200, b"internal")
    site.routes["/to-metadata"] = lambda h: h.reply(
        302, b"", None, {"Location": "http://169.254.169.254/latest/meta-data/"}
    )
    default = await call(registry(AddressPolicy()), site.url("/echo"), method="POST", body="x")
    assert default.error_code is ErrorCode.DENIED_BY_POLICY
    assert "is a loopback address (127.0.0.1)" in default.error
    assert site.seen == []
    redirected = await call(registry(), site.url("/to-metadata"))
    assert redirected.error_code is ErrorCode.DENIED_BY_POLICY
    assert "which is a cloud metadata service address (169.254.169.254)" in redirected.error
    for url in ("http://[::1]/", "http://10.0.0.1/", "http://[fe80::1]/", "http://0.0.0.0/"):
        refused = await call(registry(AddressPolicy()), url)
        assert refused.error_code is ErrorCode.DENIED_BY_POLICY, url


async def test_a_slow_server_times_out(site: Site) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        site.release.wait(10)
        h.reply(200, b"late")

    site.routes["/slow"] = slow
    started = time.monotonic()
    result = await call(registry(read_timeout=0.2), site.url("/slow"))
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == f"timed out after 0.2 s waiting for '{site.url('/slow')}' to answer"
    assert time.monotonic() - started < 2
