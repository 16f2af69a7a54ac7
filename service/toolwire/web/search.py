"""Search through a chain of providers: the first one with results answers.

    chain = SearchChain([("searxng", SearxngSearch(url)), ("brave", BraveSearch(key))])
    answer = await chain.search("pydantic frozen models", 5)
    answer.provider, answer.hits, answer.skipped

A provider that raises, times out or finds nothing is skipped, with the
reason kept, and the next one is asked. When every provider failed the chain
raises `SearchError` naming each failure; when they answered but found
nothing, the answer is empty (an empty answer is a result, not an error).
A chain is itself a `SearchFn`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import SearchError, WebError
from .ports import SearchFn, SearchHit

__all__ = ["SearchAnswer", "SearchChain"]

NO_RESULTS = "no results"


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    provider: str
    """The provider that answered; empty when none had results."""
    hits: list[SearchHit]
    skipped: tuple[tuple[str, str], ...] = ()
    """(provider, why) for each provider asked before, in order."""


class SearchChain:
    """Providers in order of preference, each given at most `timeout` seconds
    (None: no limit of the chain's own)."""

    def __init__(
        self, providers: Sequence[tuple[str, SearchFn]], *, timeout: float | None = 10.0
    ) -> None:
        names = [name for name, _ in providers]
        if not names:
            raise ValueError("a search chain needs at least one provider")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"search providers need distinct names; repeated: {duplicates}")
        self.providers = tuple(providers)
        self.timeout = timeout

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.providers]

    def __repr__(self) -> str:
        return f"SearchChain({self.names!r}, timeout={self.timeout!r})"

    async def search(self, query: str, limit: int) -> SearchAnswer:
        skipped: list[tuple[str, str]] = []
        for name, provider in self.providers:
            try:
                async with asyncio.timeout(self.timeout):
                    hits = await provider(query, limit)
            except TimeoutError:
                skipped.append((name, f"timed out after {self.timeout or 0:g} s"))
                continue
            except Exception as e:
                skipped.append((name, _describe(e)))
                continue
            if not hits:
                skipped.append((name, NO_RESULTS))
                continue
            return SearchAnswer(name, list(hits[:limit]), tuple(skipped))
        if all(why != NO_RESULTS for _, why in skipped):
            failures = "; ".join(f"{name}: {why}" for name, why in skipped)
            raise SearchError(f"every search provider failed — {failures}")
        return SearchAnswer("", [], tuple(skipped))

    async def __call__(self, query: str, limit: int) -> list[SearchHit]:
        return (await self.search(query, limit)).hits


def _describe(error: Exception) -> str:
    if isinstance(error, WebError):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
