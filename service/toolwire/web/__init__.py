"""The web: ports for search and fetch, their default implementations, and
the address policy that keeps a model's requests off private networks.

    from toolwire.web import AddressPolicy, HttpFetcher, SearchChain, SearxngSearch

    fetch = HttpFetcher(AddressPolicy())                      # public addresses only
    search = SearchChain([("searxng", SearxngSearch("http://127.0.0.1:8888"))])

The tools built on them live in `toolwire.builtin.web` and `toolwire.builtin.http`.
"""

from .addresses import (
    AddressPolicy,
    IPAddress,
    Resolver,
    Target,
    blocked_kind,
    check_url,
    system_resolver,
)
from .client import DEFAULT_USER_AGENT, GuardedClient, HttpResponse
from .errors import (
    AddressRefusedError,
    FetchError,
    InvalidUrlError,
    SearchError,
    UnsupportedContentError,
    WebError,
)
from .fetcher import HttpFetcher
from .ports import FetchedPage, FetchFn, SearchFn, SearchHit
from .providers import BRAVE_ENDPOINT, BraveSearch, SearxngSearch, build_search_chain
from .search import SearchAnswer, SearchChain

__all__ = [
    "BRAVE_ENDPOINT",
    "DEFAULT_USER_AGENT",
    "AddressPolicy",
    "AddressRefusedError",
    "BraveSearch",
    "FetchError",
    "FetchFn",
    "FetchedPage",
    "GuardedClient",
    "HttpFetcher",
    "HttpResponse",
    "IPAddress",
    "InvalidUrlError",
    "Resolver",
    "SearchAnswer",
    "SearchChain",
    "SearchError",
    "SearchFn",
    "SearchHit",
    "SearxngSearch",
    "Target",
    "UnsupportedContentError",
    "WebError",
    "blocked_kind",
    "build_search_chain",
    "check_url",
    "system_resolver",
]
