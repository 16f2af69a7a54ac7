"""Search providers over HTTP: a SearXNG instance and the Brave Search API.

Both are `SearchFn`s to put in a `SearchChain`. Their addresses are the
operator's configuration, so they are not subject to the fetch address
policy (a SearXNG instance on localhost is the common case).

- SearXNG: `GET {base}/search?q=…&format=json`. The instance must allow the
  JSON format (`search: formats: [html, json]` in its settings.yml); without
  it SearXNG answers 403, which the error says.
- Brave: `GET https://api.search.brave.com/res/v1/web/search?q=…&count=…`
  with the key in `X-Subscription-Token`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import httpx

from .client import DEFAULT_USER_AGENT, connect_failure
from .errors import SearchError
from .ports import SearchFn, SearchHit
from .search import SearchChain

__all__ = ["BRAVE_ENDPOINT", "BraveSearch", "SearxngSearch", "build_search_chain"]

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
BRAVE_MAX_COUNT = 20
_TAG = re.compile(r"<[^>]{0,200}>")


def _plain(text: Any) -> str:
    """Snippets come with <strong> tags and entities; the model wants words."""
    if not isinstance(text, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", text)).split())


async def _get_json(
    who: str,
    url: str,
    *,
    params: Mapping[str, str | int],
    headers: Mapping[str, str],
    timeout: float,
    trust_env: bool,
    statuses: Mapping[int, str],
) -> Any:
    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=trust_env) as client:
            response = await client.get(url, params=params, headers=headers)
    except httpx.TimeoutException:
        raise SearchError(f"{who} did not answer within {timeout:g} s") from None
    except httpx.ConnectError as e:
        raise SearchError(f"could not connect to {who}: {connect_failure(e)}") from e
    except httpx.HTTPError as e:
        raise SearchError(f"{who} request failed: {e or type(e).__name__}") from e
    if response.status_code != 200:
        explained = statuses.get(response.status_code, "")
        excerpt = " ".join(response.text[:200].split())
        detail = explained or (f": {excerpt}" if excerpt else "")
        raise SearchError(
            f"{who} answered HTTP {response.status_code} {response.reason_phrase}{detail}"
        )
    try:
        return response.json()
    except ValueError as e:
        raise SearchError(f"{who} answered something that is not JSON: {e}") from e


class SearxngSearch:
    """A SearXNG instance's JSON API.

    Args:
        base_url: The instance, e.g. `http://127.0.0.1:8888` (its `/search` is used).
        timeout: Seconds for the request.
        categories: SearXNG categories (`general`, `news`, …), comma-separated.
        language: A language code (`en`, `de-CH`, …).
        trust_env: Use proxy settings from the environment.
    """

    name = "searxng"

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10.0,
        categories: str | None = None,
        language: str | None = None,
        trust_env: bool = True,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.categories = categories
        self.language = language
        self.trust_env = trust_env
        self.user_agent = user_agent

    def __repr__(self) -> str:
        return f"SearxngSearch({self.base_url!r})"

    async def __call__(self, query: str, limit: int) -> list[SearchHit]:
        params: dict[str, str | int] = {"q": query, "format": "json", "pageno": 1}
        if self.categories:
            params["categories"] = self.categories
        if self.language:
            params["language"] = self.language
        data = await _get_json(
            f"SearXNG at {self.base_url}",
            f"{self.base_url}/search",
            params=params,
            headers={"Accept": "application/json", "User-Agent": self.user_agent},
            timeout=self.timeout,
            trust_env=self.trust_env,
            statuses={
                403: " (is the JSON format enabled? add 'json' to search.formats in the "
                "instance's settings.yml)",
                429: " (rate limited by the instance's limiter)",
            },
        )
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise SearchError(f"SearXNG at {self.base_url} answered JSON without 'results'")
        return _hits(results, "content", limit)


class BraveSearch:
    """The Brave Search web search API.

    Args:
        api_key: The subscription token.
        endpoint: The API URL (tests point it at a local fake).
        timeout: Seconds for the request.
        country: A country code for the results (`us`, `de`, …).
        safesearch: `off`, `moderate` or `strict`.
        trust_env: Use proxy settings from the environment.
    """

    name = "brave"

    def __init__(
        self,
        api_key: str,
        *,
        endpoint: str = BRAVE_ENDPOINT,
        timeout: float = 10.0,
        country: str | None = None,
        safesearch: str | None = None,
        trust_env: bool = True,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        if not api_key:
            raise ValueError("BraveSearch needs an API key")
        self._api_key = api_key
        self.endpoint = endpoint
        self.timeout = timeout
        self.country = country
        self.safesearch = safesearch
        self.trust_env = trust_env
        self.user_agent = user_agent

    def __repr__(self) -> str:  # never shows the key
        return f"BraveSearch(endpoint={self.endpoint!r})"

    async def __call__(self, query: str, limit: int) -> list[SearchHit]:
        params: dict[str, str | int] = {"q": query, "count": max(1, min(limit, BRAVE_MAX_COUNT))}
        if self.country:
            params["country"] = self.country
        if self.safesearch:
            params["safesearch"] = self.safesearch
        data = await _get_json(
            "Brave Search",
            self.endpoint,
            params=params,
            headers={
                "Accept": "application/json",
                "X-Subscription-Token": self._api_key,
                "User-Agent": self.user_agent,
            },
            timeout=self.timeout,
            trust_env=self.trust_env,
            statuses={
                401: " (the API key was rejected)",
                403: " (the API key is not allowed to use this endpoint)",
                422: " (the request was rejected as invalid)",
                429: " (rate limit or quota reached)",
            },
        )
        web = data.get("web") if isinstance(data, dict) else None
        results = web.get("results") if isinstance(web, dict) else None
        if not isinstance(results, list):
            return []  # Brave leaves out "web" when it found nothing
        return _hits(results, "description", limit)


def _hits(results: list[Any], snippet_key: str, limit: int) -> list[SearchHit]:
    """Search hits from a provider's result objects: those with a URL, in order."""
    hits = [
        SearchHit(
            title=_plain(item.get("title")) or item["url"],
            url=item["url"],
            snippet=_plain(item.get(snippet_key)),
        )
        for item in results
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]
    ]
    return hits[:limit]


def build_search_chain(
    *,
    searxng_url: str | None = None,
    brave_api_key: str | None = None,
    timeout: float = 10.0,
) -> SearchChain | None:
    """The chain for what is configured, in that order (SearXNG first: it is
    free and local); None when nothing is."""
    providers: list[tuple[str, SearchFn]] = []
    if searxng_url:
        providers.append((SearxngSearch.name, SearxngSearch(searxng_url, timeout=timeout)))
    if brave_api_key:
        providers.append((BraveSearch.name, BraveSearch(brave_api_key, timeout=timeout)))
    return SearchChain(providers, timeout=timeout) if providers else None
