"""`web_search` and `web_fetch`: the web as a model reads it.

    tools = web_tools(SearchChain([("searxng", SearxngSearch(url))]), HttpFetcher())

The tools depend on two ports only (`SearchFn`, `FetchFn`, see
`toolwire.web`). `web_fetch` pages long documents: each call returns at
most `page_chars` characters, and when more remains the output ends with the
`continue_from` offset to pass next. Fetched documents stay in a small cache
for `cache_ttl` seconds, keyed by URL, so reading on serves the same snapshot
without fetching again; a call without `continue_from` always fetches afresh.

Errors: a malformed or non-http(s) URL is `invalid_arguments`, an address the
policy refuses is `denied_by_policy`, anything the network or the site did
(unreachable, timeout, too many redirects, HTTP errors, binary content) is
`handler_error`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import httpx
from pydantic import Field

from toolwire.declare import tool
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.tools import Tool
from toolwire.validation import ArgumentError
from toolwire.web.errors import AddressRefusedError, WebError
from toolwire.web.paging import Page, TtlCache, page_at
from toolwire.web.ports import FetchedPage, FetchFn, SearchFn
from toolwire.web.search import SearchChain

__all__ = ["NO_SEARCH_PROVIDER", "web_tools"]

DEFAULT_PAGE_CHARS = 8000
DEFAULT_PAGE_BYTES = 12_000
"""Bytes of UTF-8 per page at most, so a page of any script fits the
registry's default 16 KiB output budget with its header and footer."""
MAX_SEARCH_RESULTS = 20

NO_SEARCH_PROVIDER = (
    "no search provider is configured (set TOOLWIRE_SEARXNG_URL to a SearXNG instance "
    "with its JSON API enabled, or TOOLWIRE_BRAVE_API_KEY to a Brave Search API key)"
)

FETCH_DESCRIPTION = (
    "Fetch a web page (http or https) and return its content as Markdown (for HTML) or as "
    "text (plain text, JSON, XML).\n\n"
    "Long documents come in pages of about {page_chars} characters: when more remains, the "
    "output ends with the continue_from value to pass to read the next page of the same URL. "
    "Binary files (images, PDFs, archives) are refused, and so are addresses on private or "
    "local networks."
)

SEARCH_DESCRIPTION = (
    "Search the web and return the top results, each with its title, URL and a snippet.\n\n"
    "Use web_fetch on a result's URL to read the page itself."
)


def web_tools(
    search: SearchFn | None,
    fetch: FetchFn,
    *,
    page_chars: int = DEFAULT_PAGE_CHARS,
    page_bytes: int = DEFAULT_PAGE_BYTES,
    cache_entries: int = 16,
    cache_ttl: float = 300.0,
    clock: Callable[[], float] = time.monotonic,
    no_search_provider: str = NO_SEARCH_PROVIDER,
) -> list[Tool]:
    """`web_search` and `web_fetch` over the given ports.

    Args:
        search: The search function; a `SearchChain` names the provider that
            answered. None: `web_search` is listed but fails with
            `no_search_provider`.
        fetch: The fetch function (`toolwire.web.HttpFetcher` for the real web).
        page_chars: Characters per page of `web_fetch` at most.
        page_bytes: UTF-8 bytes per page at most.
        cache_entries: Documents kept for paging (0 turns the cache off).
        cache_ttl: Seconds a fetched document is reused for paging.
        clock: The cache's clock (monotonic seconds).
        no_search_provider: The error when `search` is None.
    """
    if page_chars < 1 or page_bytes < 16:
        raise ValueError("page_chars must be ≥ 1 and page_bytes ≥ 16")
    chain: SearchChain | None
    if search is None or isinstance(search, SearchChain):
        chain = search
    else:
        chain = SearchChain([(getattr(search, "name", "search"), search)], timeout=None)
    cache: TtlCache[str, FetchedPage] = TtlCache(cache_entries, cache_ttl, clock)

    @tool(
        name="web_search",
        description=SEARCH_DESCRIPTION,
        safety_tier=SafetyTier.READ_ONLY,
        group="web",
    )
    async def web_search(
        query: Annotated[str, Field(min_length=1)],
        limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_RESULTS)] = 5,
    ) -> ToolResult:
        """Args:
        query: What to search for.
        limit: How many results to return at most.
        """
        if not query.strip():
            raise ArgumentError("'query' is empty; say what to search for")
        if chain is None:
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, no_search_provider)
        try:
            answer = await chain.search(query, limit)
        except WebError as e:
            return ToolResult.fail(ErrorCode.HANDLER_ERROR, f"web search failed: {e}")
        skipped = [{"provider": name, "reason": why} for name, why in answer.skipped]
        notes = "; ".join(f"{name}: {why}" for name, why in answer.skipped)
        if not answer.hits:
            text = f"No results for {query!r}" + (f" ({notes})." if notes else ".")
        else:
            lines = [f"Results for {query!r} from {answer.provider}:"]
            for number, hit in enumerate(answer.hits, 1):
                lines.append(f"{number}. {hit.title}\n   {hit.url}")
                if hit.snippet:
                    lines.append(f"   {hit.snippet}")
            if notes:
                lines.append(f"(skipped before {answer.provider}: {notes})")
            text = "\n".join(lines)
        return ToolResult.ok(
            text,
            {
                "query": query,
                "provider": answer.provider or None,
                "results": [hit.model_dump() for hit in answer.hits],
                "skipped": skipped,
            },
        )

    @tool(
        name="web_fetch",
        description=FETCH_DESCRIPTION.format(page_chars=page_chars),
        safety_tier=SafetyTier.SIDE_EFFECTING,
        group="web",
    )
    async def web_fetch(
        url: str,
        continue_from: Annotated[int, Field(ge=0)] = 0,
    ) -> ToolResult:
        """Args:
        url: The page's address, starting with http:// or https://.
        continue_from: The character offset to read from, as given at the end of the
            previous page; 0 for the start.
        """
        page = cache.get(url) if continue_from > 0 else None
        if page is None:
            try:
                page = await fetch(url)
            except AddressRefusedError as e:
                return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, str(e))
            except ArgumentError:
                raise  # a bad URL: invalid arguments
            except WebError as e:
                return ToolResult.fail(ErrorCode.HANDLER_ERROR, str(e))
            if page.status >= 400:
                return ToolResult.fail(ErrorCode.HANDLER_ERROR, _error_status(page))
            cache.put(url, page)
        total = len(page.text)
        if continue_from > 0 and continue_from >= total:
            raise ArgumentError(
                f"continue_from={continue_from} is beyond the end of {page.url} "
                f"({total:,} characters); pass an offset below {total} "
                f"(or 0 to read from the start)"
            )
        part = page_at(page.text, continue_from, max_chars=page_chars, max_bytes=page_bytes)
        return ToolResult.ok(_render(url, page, part), _structured(url, page, part))

    return [web_search.tool, web_fetch.tool]


def _error_status(page: FetchedPage) -> str:
    excerpt = " ".join(page.text[:300].split())
    said = f": {excerpt}" if excerpt else ""
    return f"'{page.url}' answered HTTP {page.status}{said}"


def _render(url: str, page: FetchedPage, part: Page) -> str:
    head = [f"# {page.title}"] if page.title else []
    source = f"URL: {page.url}"
    if page.url != url and page.url != _normalized(url):
        source += f" (redirected from {url})"
    head.append(source)
    if part.count > 1:
        head.append(
            f"Page {part.number} of {part.count}: characters {part.start:,}–{part.end:,} "
            f"of {part.total:,}"
        )
    body = part.text if part.text.strip() else "(the page has no text content)"
    text = "\n".join(head) + "\n\n" + body
    if part.next_offset is not None:
        text += (
            f"\n\n… [page {part.number} of {part.count} — call web_fetch again with "
            f"continue_from={part.next_offset} to read on]"
        )
    elif part.count > 1:
        text += f"\n\n[page {part.number} of {part.count} — the end]"
    return text


def _normalized(url: str) -> str:
    try:
        return str(httpx.URL(url))
    except (httpx.InvalidURL, TypeError, ValueError):
        return url


def _structured(url: str, page: FetchedPage, part: Page) -> dict[str, object]:
    return {
        "url": url,
        "final_url": page.url,
        "status": page.status,
        "content_type": page.content_type,
        "title": page.title,
        "offset": part.start,
        "next_offset": part.next_offset,
        "total_chars": part.total,
        "page": part.number,
        "pages": part.count,
        "download_truncated": page.truncated,
    }
