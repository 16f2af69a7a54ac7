"""Long texts in pages a model can read one at a time, and a short-lived
cache so that reading on does not fetch again.

A page holds at most `max_chars` characters and `max_bytes` bytes of UTF-8
(so that it fits the registry's output budget whatever the script), and
ends at a paragraph, line or word break when one is near its end. The cursor
is the character offset where the next page starts.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Page", "TtlCache", "page_at"]

_BREAKS = ("\n\n", "\n", " ")


@dataclass(frozen=True, slots=True)
class Page:
    text: str
    start: int
    end: int
    total: int
    """Characters in the whole text."""
    number: int
    """1-based, counting the pages read from the start to here."""
    count: int
    """Pages in all, reading on from here."""

    @property
    def next_offset(self) -> int | None:
        return self.end if self.end < self.total else None


def _page_end(text: str, start: int, max_chars: int, max_bytes: int) -> int:
    end = min(len(text), start + max_chars)
    if len(text[start:end].encode()) > max_bytes:
        low, high = start + 1, end  # the longest prefix within the byte budget
        while low < high:
            middle = (low + high + 1) // 2
            if len(text[start:middle].encode()) <= max_bytes:
                low = middle
            else:
                high = middle - 1
        end = low
    if end < len(text):
        window = start + (end - start) * 4 // 5
        for separator in _BREAKS:
            at = text.rfind(separator, window, end)
            if at != -1:
                return at + len(separator)
    return end


def page_at(text: str, start: int, *, max_chars: int, max_bytes: int) -> Page:
    """The page that starts at character `start` (0 ≤ start ≤ len(text))."""
    if max_chars < 1 or max_bytes < 4:
        raise ValueError("a page needs max_chars ≥ 1 and max_bytes ≥ 4")
    if not 0 <= start <= len(text):
        raise ValueError(f"start {start} is outside the text (0..{len(text)})")
    before = 0
    offset = 0
    while offset < start:
        offset = _page_end(text, offset, max_chars, max_bytes)
        before += 1
    # Reading on from inside a page counts the part before `start` as a page.
    end = _page_end(text, start, max_chars, max_bytes) if start < len(text) else start
    after = 0
    offset = end
    while offset < len(text):
        offset = _page_end(text, offset, max_chars, max_bytes)
        after += 1
    number = before + 1
    return Page(
        text=text[start:end],
        start=start,
        end=end,
        total=len(text),
        number=number,
        count=number + after,
    )


K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """A small LRU whose entries expire `ttl` seconds after they were stored."""

    def __init__(
        self, max_entries: int, ttl: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        stored, value = found
        if self._clock() - stored > self.ttl:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        if self.max_entries <= 0:
            return
        self._entries[key] = (self._clock(), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
