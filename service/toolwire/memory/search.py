"""Turning a model's free text into a safe FTS5 query, and scores into a ranking.

A model writes queries like `what's the user's "favourite" *drink* - NEAR(home`:
FTS5's query language would read quotes, `*`, `-`, `NEAR(`, `AND`/`OR`/`NOT`
and column filters in it, and fail or mean something else. So the text is cut
into words (Unicode letters and digits) and each word becomes a quoted string,
which FTS5 takes literally; the words are OR-ed, and BM25 ranks blocks that
match more (and rarer) words first. Text without any word yields no query: the
store then answers with the most recent blocks instead of an error, because
"show me what you remember" is a reasonable thing for a model to ask.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence

MAX_QUERY_WORDS = 32
"""Words of a query that are searched for; the rest are ignored (bounded cost)."""

_WORD = re.compile(r"\w+")


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression that finds blocks containing any word of
    `text`, or None when `text` has no word to search for."""
    words: dict[str, str] = {}  # casefolded -> as written, first seen first
    for word in _WORD.findall(text):
        if word.strip("_"):
            words.setdefault(word.casefold(), word)
            if len(words) == MAX_QUERY_WORDS:
                break
    if not words:
        return None
    # A quoted string is taken literally; `"` inside one is written `""` (a
    # word from \w+ never contains one, but the rule costs nothing to keep).
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words.values())


def pack(vector: Sequence[float]) -> bytes:
    """A vector as the BLOB stored with a block: float32, native byte order."""
    return array("f", vector).tobytes()


def unpack(blob: bytes) -> array[float]:
    vector = array("f")
    vector.frombytes(blob)
    return vector


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for a zero vector or vectors of different sizes."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def normalized_bm25(raw: dict[str, float]) -> dict[str, float]:
    """FTS5's bm25() (negative; lower is better) as relevance in (0, 1],
    relative to the best match."""
    if not raw:
        return {}
    best = max(-r for r in raw.values())
    if best <= 0:
        return dict.fromkeys(raw, 1.0)
    return {key: max(0.0, -r) / best for key, r in raw.items()}
