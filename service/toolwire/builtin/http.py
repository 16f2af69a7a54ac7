"""`http_fetch`: one HTTP request, for APIs and anything `web_fetch` is not.

    tools = http_tools(AddressPolicy(allow_hosts=["127.0.0.1"]))

The request goes through `toolwire.web.GuardedClient`, so the address
policy of `web_fetch` applies to it and to every redirect. The answer is the
status, a safe subset of the response headers (never cookies), and the body
as text, cut to `max_body_chars` with a note when longer; a binary body is
described, not shown. HTTP error statuses are answers, not failures: the
model asked for a request and gets its outcome.
"""

from __future__ import annotations

import re
from typing import Literal

from toolwire.declare import tool
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.tools import Tool
from toolwire.validation import ArgumentError
from toolwire.web.addresses import AddressPolicy, Resolver, system_resolver
from toolwire.web.client import DEFAULT_USER_AGENT, GuardedClient, HttpResponse
from toolwire.web.content import content_kind, decode_text, media_type, sniff_kind
from toolwire.web.errors import AddressRefusedError, WebError

__all__ = ["SHOWN_RESPONSE_HEADERS", "http_tools"]

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]

SHOWN_RESPONSE_HEADERS = (
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "content-disposition",
    "content-range",
    "accept-ranges",
    "cache-control",
    "etag",
    "expires",
    "last-modified",
    "date",
    "age",
    "location",
    "retry-after",
    "allow",
    "vary",
    "link",
    "www-authenticate",
    "x-request-id",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "ratelimit-policy",
)
_SET_BY_US = {
    "host": "it is taken from the URL",
    "content-length": "it is computed from the body",
    "transfer-encoding": "the body is sent whole",
    "connection": "connections are managed by http_fetch",
    "keep-alive": "connections are managed by http_fetch",
    "proxy-connection": "connections are managed by http_fetch",
    "upgrade": "protocol upgrades are not supported",
    "te": "transfer codings are managed by http_fetch",
    "trailer": "trailers are not supported",
    "expect": "the body is sent whole",
    "proxy-authorization": "no proxy is used",
}
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})

DESCRIPTION = (
    "Send one HTTP request (GET, POST, PUT, PATCH, DELETE or HEAD) and return the status, the "
    "main response headers and the body as text.\n\n"
    "For calling APIs; to read a web page, web_fetch gives cleaner text. Redirects are "
    "followed. Long bodies are cut, binary bodies are described rather than shown, and "
    "addresses on private or local networks are refused."
)


def http_tools(
    policy: AddressPolicy | None = None,
    *,
    timeout: float = 20.0,
    connect_timeout: float = 5.0,
    read_timeout: float = 10.0,
    max_bytes: int = 256 * 1024,
    max_body_chars: int = 10_000,
    max_redirects: int = 5,
    user_agent: str = DEFAULT_USER_AGENT,
    resolver: Resolver = system_resolver,
) -> list[Tool]:
    """`http_fetch` under `policy` (default: public addresses only).

    Args:
        policy: Which addresses may be reached.
        timeout: Seconds for the whole request, redirects and body included.
        connect_timeout: Seconds for one connection attempt.
        read_timeout: Seconds to wait for the next bytes of the response.
        max_bytes: Response body bytes read at most.
        max_body_chars: Body characters shown at most.
        max_redirects: Redirects followed at most; each hop is re-checked.
        user_agent: The default `User-Agent` (a request may set its own).
        resolver: Name resolution.
    """
    client = GuardedClient(
        policy,
        resolver=resolver,
        timeout=timeout,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        max_redirects=max_redirects,
        max_bytes=max_bytes,
        user_agent=user_agent,
    )

    @tool(
        name="http_fetch",
        description=DESCRIPTION,
        safety_tier=SafetyTier.SIDE_EFFECTING,
        group="net",
    )
    async def http_fetch(
        url: str,
        method: Method = "GET",
        headers: dict[str, str] | None = None,
        body: str = "",
    ) -> ToolResult:
        """Args:
        url: The address, starting with http:// or https://.
        method: The HTTP method.
        headers: Request headers, as name → value (e.g. {"Accept": "application/json"}).
        body: The request body as text, for POST, PUT, PATCH and DELETE; set its
            Content-Type in headers.
        """
        checked = _checked_headers(headers or {})
        if body and method not in _WITH_BODY:
            raise ArgumentError(f"a {method} request has no body; leave 'body' out or use POST")
        try:
            response = await client.request(
                method,
                url,
                headers=checked,
                body=body.encode() if body else None,
            )
        except AddressRefusedError as e:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, str(e))
        except ArgumentError:
            raise
        except WebError as e:
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, str(e))
        return _result(url, method, response, max_bytes, max_body_chars)

    return [http_fetch.tool]


def _checked_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not _TOKEN.match(name):
            raise ArgumentError(f"header name {name!r} is not a valid HTTP header name")
        if any(c in value for c in "\r\n\0"):
            raise ArgumentError(f"header {name!r} has a line break or NUL byte in its value")
        why = _SET_BY_US.get(name.lower())
        if why is not None:
            raise ArgumentError(f"header {name!r} cannot be set: {why}")
    return headers


def _result(
    url: str, method: str, response: HttpResponse, max_bytes: int, max_chars: int
) -> ToolResult:
    shown = {
        name: response.headers[name] for name in SHOWN_RESPONSE_HEADERS if name in response.headers
    }
    mime, charset = media_type(response.headers.get("content-type"))
    kind = content_kind(mime) if mime else sniff_kind(response.content)
    notes: list[str] = []
    binary = kind is None and bool(response.content)
    cut = response.truncated
    if binary:
        text = ""
        size = f"{len(response.content):,}{'+' if response.truncated else ''}"
        notes.append(f"[binary body: {size} bytes of {mime or 'unknown type'}, not shown]")
    else:
        text = decode_text(response.content, charset, kind or "text", truncated=response.truncated)
        if len(text) > max_chars:
            notes.append(f"[body truncated: showing {max_chars:,} of {len(text):,} characters]")
            text, cut = text[:max_chars], True
        if response.truncated:
            notes.append(f"[body over {max_bytes:,} bytes: stopped reading there]")
    lines = [f"HTTP {response.status} {response.reason}".rstrip()]
    if response.redirects:
        lines.append(f"URL: {response.url} (after {len(response.redirects)} redirect(s))")
    lines += [f"{name}: {value}" for name, value in shown.items()]
    parts = ["\n".join(lines)]
    if method != "HEAD" and not binary:
        parts.append(text or "(empty body)")
    if notes:
        parts.append("\n".join(notes))
    output = "\n\n".join(parts)
    return ToolResult.ok(
        output,
        {
            "status": response.status,
            "reason": response.reason,
            "url": response.url,
            "redirects": list(response.redirects),
            "headers": shown,
            "body": None if binary else text,
            "body_truncated": cut,
            "binary": binary,
        },
    )
