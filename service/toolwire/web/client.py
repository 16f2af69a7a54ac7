"""HTTP requests under the address policy: `GuardedClient`.

Every hop is checked: the URL, then each redirect's target, before anything
connects. Redirects are followed here (not by httpx), at most `max_redirects`
of them. The connection goes to an address `check_url` approved — the
request is sent to that IP, with the original `Host` header and, for https,
the hostname as TLS SNI and for certificate checks — so the name is never
resolved twice (no DNS-rebinding window). Environment proxies are ignored:
a proxy would resolve names itself.

Each hop gets its own short-lived httpx client, so no connection outlives a
request and no TLS connection made for one name serves another.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from .addresses import AddressPolicy, Resolver, Target, check_url, system_resolver
from .errors import FetchError

__all__ = ["DEFAULT_USER_AGENT", "GuardedClient", "HttpResponse", "Inspect", "connect_failure"]

DEFAULT_USER_AGENT = "toolwire/0.1 (web tools for LLM agents)"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")
_BODY_HEADERS = ("content-type", "content-length", "content-encoding", "transfer-encoding")

_UNREACHABLE = {
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ECONNRESET: "connection reset",
}

Inspect = Callable[[httpx.Response, str], None]
"""Called with the final response (headers only, body unread) and its URL;
may raise to refuse the body (say, a content type the caller cannot use)."""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    url: str
    """The final URL, after redirects."""
    status: int
    reason: str
    headers: httpx.Headers
    content: bytes
    """The (decompressed) body, at most `max_bytes` of it."""
    truncated: bool
    """The body went on past `max_bytes`; the rest was not read."""
    redirects: tuple[str, ...] = ()
    """The URLs that redirected, in order."""


class GuardedClient:
    """Sends requests that only reach addresses the policy allows.

    `timeout` bounds the whole request (resolution, every hop, the body);
    `connect_timeout` one connection attempt; `read_timeout` the wait for
    the next bytes of the response.
    """

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        *,
        resolver: Resolver = system_resolver,
        timeout: float = 20.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        max_redirects: int = 5,
        max_bytes: int = 2 * 1024 * 1024,
        user_agent: str = DEFAULT_USER_AGENT,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        if max_redirects < 0 or max_bytes < 0:
            raise ValueError("max_redirects and max_bytes must not be negative")
        self.policy = policy or AddressPolicy()
        self.resolver = resolver
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self.read_timeout = min(read_timeout, timeout)
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        self.user_agent = user_agent
        self._ssl: ssl.SSLContext | bool | None = None if verify is True else verify

    def _ssl_context(self) -> ssl.SSLContext | bool:
        # One context for all requests: building one loads the CA bundle.
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        inspect: Inspect | None = None,
    ) -> HttpResponse:
        """Raises InvalidUrlError, AddressRefusedError or FetchError (timeouts,
        connection failures, too many redirects)."""
        try:
            async with asyncio.timeout(self.timeout):
                return await self._request(method, url, headers or {}, body, inspect)
        except TimeoutError:
            raise FetchError(f"timed out after {self.timeout:g} s fetching '{url}'") from None

    async def _request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        inspect: Inspect | None,
    ) -> HttpResponse:
        sent = httpx.Headers(headers)
        redirects: list[str] = []
        target = await check_url(url, self.policy, self.resolver)
        while True:
            async with self._client() as client:
                response = await self._send(client, target, method, sent, body)
                try:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_STATUSES and location:
                        here = str(target.url)
                        if len(redirects) == self.max_redirects:
                            path = " → ".join([*redirects, here])
                            raise FetchError(
                                f"too many redirects: stopped after {self.max_redirects} "
                                f"({path}), which redirects again to '{location}'"
                            )
                        redirects.append(here)
                        try:
                            following = target.url.join(location)
                        except (httpx.InvalidURL, ValueError) as e:
                            raise FetchError(
                                f"'{here}' redirects to an invalid URL '{location}': {e}"
                            ) from e
                        method, body, sent = _redirected(
                            response.status_code, method, body, sent, target.url, following
                        )
                        target = await check_url(
                            str(following), self.policy, self.resolver, redirected_from=here
                        )
                        continue
                    final = str(target.url)
                    if inspect is not None:
                        inspect(response, final)
                    content, truncated = await self._read(response, final, method)
                    return HttpResponse(
                        url=final,
                        status=response.status_code,
                        reason=response.reason_phrase,
                        headers=response.headers,
                        content=content,
                        truncated=truncated,
                        redirects=tuple(redirects),
                    )
                finally:
                    await response.aclose()

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            verify=self._ssl_context(),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(
                self.read_timeout, connect=self.connect_timeout, pool=self.connect_timeout
            ),
            headers={"User-Agent": self.user_agent},
        )

    async def _send(
        self,
        client: httpx.AsyncClient,
        target: Target,
        method: str,
        headers: httpx.Headers,
        body: bytes | None,
    ) -> httpx.Response:
        url = str(target.url)
        wire_headers = httpx.Headers(headers)
        wire_headers["Host"] = target.url.netloc.decode("ascii")
        extensions = {}
        if target.url.scheme == "https" and not target.is_ip_literal:
            extensions["sni_hostname"] = target.host
        failure = ""
        for ip in target.addresses:
            request = client.build_request(
                method,
                target.url.copy_with(host=str(ip)),
                headers=wire_headers,
                content=body,
                extensions=extensions,
            )
            try:
                return await client.send(request, stream=True)
            except httpx.ConnectTimeout:
                failure = f"timed out after {self.connect_timeout:g} s"
            except httpx.ConnectError as e:
                failure = connect_failure(e)
            except httpx.TimeoutException:
                raise FetchError(
                    f"timed out after {self.read_timeout:g} s waiting for '{url}' to answer"
                ) from None
            except httpx.HTTPError as e:
                raise FetchError(f"request to '{url}' failed: {_describe(e)}") from e
        where = ", ".join(str(ip) for ip in target.addresses)
        raise FetchError(f"could not connect to '{url}' ({where} port {target.port}): {failure}")

    async def _read(self, response: httpx.Response, url: str, method: str) -> tuple[bytes, bool]:
        if method == "HEAD":
            return b"", False
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                room = self.max_bytes - size
                if len(chunk) > room:
                    chunks.append(chunk[:room])
                    return b"".join(chunks), True
                chunks.append(chunk)
                size += len(chunk)
        except httpx.TimeoutException:
            raise FetchError(
                f"timed out after {self.read_timeout:g} s waiting for more of '{url}' "
                f"({size:,} bytes read)"
            ) from None
        except httpx.HTTPError as e:
            raise FetchError(f"reading '{url}' failed after {size:,} bytes: {_describe(e)}") from e
        return b"".join(chunks), False


def _redirected(
    status: int,
    method: str,
    body: bytes | None,
    headers: httpx.Headers,
    source: httpx.URL,
    target: httpx.URL,
) -> tuple[str, bytes | None, httpx.Headers]:
    """The next hop's method, body and headers, as browsers do it: 303 (and
    301/302 after a POST) turn into a GET without body; 307/308 keep both.
    Credentials are not sent to another origin."""
    headers = httpx.Headers(headers)
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, body = "GET", None
        for name in _BODY_HEADERS:
            headers.pop(name, None)
    if (source.scheme, source.host, source.port) != (target.scheme, target.host, target.port):
        for name in _CREDENTIAL_HEADERS:
            headers.pop(name, None)
    return method, body, headers


def connect_failure(error: BaseException) -> str:
    """Why a connection failed, in words: the root cause under httpx's and
    anyio's wrappers ("All connection attempts failed")."""
    causes: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in causes:
        causes.append(current)
        current = current.__cause__ or current.__context__
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed: {cause}"
        if isinstance(cause, OSError) and cause.errno in _UNREACHABLE:
            return _UNREACHABLE[cause.errno]
    text = str(causes[-1]) or str(error)
    return text or type(error).__name__


def _describe(error: httpx.HTTPError) -> str:
    if isinstance(error, httpx.RemoteProtocolError):
        return f"the server broke the HTTP protocol or closed the connection early ({error})"
    return str(error) or type(error).__name__
