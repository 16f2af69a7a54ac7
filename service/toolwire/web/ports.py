"""The ports the web tools depend on: a search function and a fetch function.

Both are plain async callables, so a test, an agent framework or a paid API
can stand in for the defaults (`SearchChain` over `SearxngSearch` /
`BraveSearch`, and `HttpFetcher`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SearchHit(BaseModel):
    """One search result."""

    model_config = _FROZEN

    title: str
    url: str
    snippet: str = ""


class FetchedPage(BaseModel):
    """A fetched page as text the model can read."""

    model_config = _FROZEN

    url: str
    """The final URL, after redirects."""
    status: int
    content_type: str
    """The media type without parameters (`text/html`)."""
    text: str
    """Markdown for HTML, the text itself for text types."""
    title: str | None = None
    truncated: bool = False
    """The body was longer than the fetcher's size cap; `text` says so at its end."""


SearchFn = Callable[[str, int], Awaitable[list[SearchHit]]]
"""`await search(query, limit)`: at most `limit` hits, best first; raises on failure."""

FetchFn = Callable[[str], Awaitable[FetchedPage]]
"""`await fetch(url)`: the page; raises `toolwire.web.errors` exceptions on failure."""
