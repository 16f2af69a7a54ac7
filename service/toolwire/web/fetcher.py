"""The default `FetchFn`: a real HTTP GET under the address policy, as text.

    fetch = HttpFetcher(AddressPolicy(allow_hosts=["127.0.0.1"]), timeout=10)
    page = await fetch("http://127.0.0.1:8000/docs")   # FetchedPage, Markdown text

Pages of any status come back (the caller decides what a 404 means); a body
over `max_bytes` is cut there and the text says so at its end; a binary type
is refused by its `Content-Type` before the body is downloaded.
"""

from __future__ import annotations

import asyncio
import ssl

import httpx

from .addresses import AddressPolicy, Resolver, system_resolver
from .client import DEFAULT_USER_AGENT, GuardedClient
from .content import content_kind, decode_text, html_to_markdown, media_type, sniff_kind
from .errors import FetchError, UnsupportedContentError
from .ports import FetchedPage

__all__ = ["HttpFetcher"]

ACCEPT = (
    "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,"
    "application/json;q=0.9,application/xml;q=0.8,*/*;q=0.5"
)
_HTML_IN_THREAD_BYTES = 64 * 1024


class HttpFetcher:
    """A `FetchFn` over httpx.

    Args:
        policy: Which addresses may be reached (default: public ones only).
        timeout: Seconds for the whole fetch, redirects and body included.
        connect_timeout: Seconds for one connection attempt.
        read_timeout: Seconds to wait for the next bytes of a response.
        max_bytes: Body bytes read at most (after decompression).
        max_redirects: Redirects followed at most; each hop is re-checked.
        user_agent: The `User-Agent` header.
        resolver: Name resolution (tests pin names to loopback with it).
        verify: TLS verification: True (the system's CAs via httpx), False,
            or an `ssl.SSLContext` (a private CA).
    """

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        *,
        timeout: float = 20.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        max_bytes: int = 2 * 1024 * 1024,
        max_redirects: int = 5,
        user_agent: str = DEFAULT_USER_AGENT,
        resolver: Resolver = system_resolver,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.client = GuardedClient(
            policy,
            resolver=resolver,
            timeout=timeout,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_redirects=max_redirects,
            max_bytes=max_bytes,
            user_agent=user_agent,
            verify=verify,
        )

    @property
    def policy(self) -> AddressPolicy:
        return self.client.policy

    async def __call__(self, url: str) -> FetchedPage:
        response = await self.client.request(
            "GET", url, headers={"Accept": ACCEPT}, inspect=_refuse_binary
        )
        mime, charset = media_type(response.headers.get("content-type"))
        kind = content_kind(mime) if mime else sniff_kind(response.content)
        if kind is None:
            if response.status >= 400:
                kind = "text"  # an error page of an odd type: its text is still a clue
            else:
                raise UnsupportedContentError(
                    f"'{response.url}' has no content type and its body looks binary; "
                    "only HTML and text can be read, not binary files"
                )
        text = decode_text(response.content, charset, kind, truncated=response.truncated)
        title = None
        if kind == "html":
            if len(response.content) > _HTML_IN_THREAD_BYTES:
                text, title = await asyncio.to_thread(html_to_markdown, text, response.url)
            else:
                text, title = html_to_markdown(text, response.url)
        if response.truncated:
            text += (
                f"\n\n[download stopped at {self.client.max_bytes:,} bytes: the page is "
                "larger and the rest was not read]"
            )
        return FetchedPage(
            url=response.url,
            status=response.status,
            content_type=mime or ("text/html" if kind == "html" else "text/plain"),
            text=text,
            title=title,
            truncated=response.truncated,
        )


def _refuse_binary(response: httpx.Response, url: str) -> None:
    mime, _ = media_type(response.headers.get("content-type"))
    if not mime or content_kind(mime) is not None:
        return
    if response.status_code >= 400:
        raise FetchError(
            f"'{url}' answered HTTP {response.status_code} {response.reason_phrase} "
            f"(with a {mime} body)"
        )
    size = response.headers.get("content-length")
    sized = f", {int(size):,} bytes" if size and size.isdigit() else ""
    raise UnsupportedContentError(
        f"'{url}' is {mime}{sized}: only HTML and text (plain text, Markdown, JSON, XML) "
        "can be read, not images, PDFs or other binary files"
    )
