"""The SQLite memory store: ranking (BM25 and hybrid), FTS safety, schema,
durability and concurrent writers, on real files."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolwire.memory import (
    MAX_READ_LIMIT,
    SCHEMA_VERSION,
    BlockNotFoundError,
    MemoryInputError,
    MemoryPermissionError,
    MemoryStoreError,
    Permission,
    SqliteMemoryManager,
    Tier,
    WriteApplied,
    WriteQueued,
    WriteRefused,
)
from toolwire.memory.search import MAX_QUERY_WORDS, cosine, fts_query, pack, unpack


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A toy embedding: how often each letter a-z occurs. Deterministic, and
    'similar' means 'made of the same letters', which no word index sees."""
    vectors = []
    for text in texts:
        vector = [0.0] * 26
        for ch in text.lower():
            if "a" <= ch <= "z":
                vector[ord(ch) - ord("a")] += 1
        vectors.append(vector)
    return vectors


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryManager]:
    with SqliteMemoryManager(tmp_path / "memory.sqlite3") as manager:
        yield manager


def labels(found: Sequence[object]) -> list[str]:
    return [s.block.label for s in found]  # type: ignore[attr-defined]


def applied(outcome: object) -> WriteApplied:
    assert isinstance(outcome, WriteApplied), outcome
    return outcome


# --- ranking -------------------------------------------------------------------

DOCS = {
    # BM25 prefers this one: the word is in the label (weighted twice) and the
    # content is short; but its letters are nothing like the query's.
    "stone": "stone: jazz quiz, fjord vex, jumpy quokka, buzz wizz",
    # One stemmed match in the content, and letters just like the query's.
    "pebbles": "stones, notes and tones on the onset",
}


def test_hybrid_ranking_changes_the_order_of_bm25(tmp_path: Path) -> None:
    with (
        SqliteMemoryManager(tmp_path / "plain.sqlite3") as plain,
        SqliteMemoryManager(tmp_path / "hybrid.sqlite3", embed=letters) as hybrid,
    ):
        for label, content in DOCS.items():
            plain.write("u", label, content)
            hybrid.write("u", label, content)
        assert labels(plain.read("u", "stone")) == ["stone", "pebbles"]
        found = hybrid.read("u", "stone")
        assert labels(found) == ["pebbles", "stone"]
        assert all(0 < s.score <= 1 for s in found)


def test_hybrid_finds_blocks_that_share_no_word_with_the_query(tmp_path: Path) -> None:
    with (
        SqliteMemoryManager(tmp_path / "plain.sqlite3") as plain,
        SqliteMemoryManager(tmp_path / "hybrid.sqlite3", embed=letters) as hybrid,
    ):
        for manager in (plain, hybrid):
            manager.write("u", "anagram", "listen")
            manager.write("u", "zq", "xyzzy quux")
        assert plain.read("u", "silent") == []
        assert labels(hybrid.read("u", "silent")) == ["anagram"]  # xyzzy quux: cosine 0


def test_vector_weight_zero_is_plain_bm25(tmp_path: Path) -> None:
    with SqliteMemoryManager(tmp_path / "m.sqlite3", embed=letters, vector_weight=0) as m:
        for label, content in DOCS.items():
            m.write("u", label, content)
        assert labels(m.read("u", "stone")) == ["stone", "pebbles"]
    with pytest.raises(ValueError, match="weight"):
        SqliteMemoryManager(tmp_path / "m.sqlite3", fts_weight=0, vector_weight=0)


def test_embeddings_are_stored_as_float32_blobs(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SqliteMemoryManager(path, embed=letters) as m:
        m.write("u", "abc", "abc")
    with sqlite3.connect(path) as conn:
        [(blob,)] = conn.execute("SELECT embedding FROM blocks").fetchall()
    assert len(blob) == 26 * 4
    assert list(unpack(blob))[:3] == [2.0, 2.0, 2.0]


def test_a_failing_embedding_costs_no_memory(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    healthy = threading.Event()

    def flaky(texts: Sequence[str]) -> list[list[float]]:
        if not healthy.is_set():
            raise ConnectionError("embedding service down")
        return letters(texts)

    with SqliteMemoryManager(path, embed=flaky) as m:
        applied(m.write("u", "anagram", "listen"))
        assert m.read("u", "silent") == []  # falls back to BM25
        assert labels(m.read("u", "listen")) == ["anagram"]
        healthy.set()
        assert labels(m.read("u", "silent")) == ["anagram"]  # embedded on the way
    with sqlite3.connect(path) as conn:
        [(blob,)] = conn.execute("SELECT embedding FROM blocks").fetchall()
    assert blob is not None


def test_blocks_written_without_embeddings_get_them_when_one_is_configured(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.sqlite3"
    with SqliteMemoryManager(path) as m:
        m.write("u", "anagram", "listen")
    with SqliteMemoryManager(path, embed=letters) as m:
        assert labels(m.read("u", "silent")) == ["anagram"]


def test_cosine_and_packing() -> None:
    assert cosine([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 1]) == 0
    assert cosine([0, 0], [1, 1]) == 0
    assert cosine([1, 2], [1, 2, 3]) == 0
    assert list(unpack(pack([0.5, -1.25]))) == [0.5, -1.25]


# --- FTS query safety ------------------------------------------------------------


def test_fts_query_quotes_every_word() -> None:
    assert fts_query("") is None
    assert fts_query("  ?! * - ( ) \" '") is None
    assert fts_query("___") is None
    assert fts_query('NEAR(coffee "milk" -sugar*') == '"NEAR" OR "coffee" OR "milk" OR "sugar"'
    assert fts_query("Coffee coffee COFFEE") == '"Coffee"'
    assert fts_query("café 咖啡") == '"café" OR "咖啡"'
    many = fts_query(" ".join(f"w{i}" for i in range(100)))
    assert many is not None and many.count(" OR ") == MAX_QUERY_WORDS - 1


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text(max_size=200))
def test_no_text_breaks_a_read(store: SqliteMemoryManager, query: str) -> None:
    if not store.list("u"):
        store.write("u", "coffee", 'Coffee "quoted" NEAR(milk) - sugar* AND café')
        store.write("u", "tea", "Green tea, no sugar")
    found = store.read("u", query, limit=3)
    assert len(found) <= 3


@pytest.mark.parametrize("limit", [0, -1, MAX_READ_LIMIT + 1])
def test_read_limit_is_bounded(store: SqliteMemoryManager, limit: int) -> None:
    with pytest.raises(MemoryInputError, match="limit"):
        store.read("u", "x", limit)
    assert store.read("u", "x", MAX_READ_LIMIT) == []


# --- the index stays in step -----------------------------------------------------


def test_updates_and_deletes_reach_the_index(store: SqliteMemoryManager) -> None:
    block = applied(store.write("u", "note", "alpha")).block
    store.write("u", "note", "beta")
    assert store.read("u", "alpha") == []
    assert labels(store.read("u", "beta")) == ["note"]
    assert labels(store.read("u", "note")) == ["note"]  # labels are indexed too
    assert store.delete("u", block.id)
    assert store.read("u", "beta") == []
    assert store._conn is not None
    store._conn.execute("INSERT INTO blocks_fts (blocks_fts) VALUES ('integrity-check')")


def test_tiers_order_and_filter_the_listing(store: SqliteMemoryManager) -> None:
    store.write("u", "b", "x", Tier.ARCHIVAL)
    store.write("u", "c", "x", Tier.CORE)
    store.write("u", "a", "x")
    assert [b.label for b in store.list("u")] == ["c", "a", "b"]
    assert [b.label for b in store.list("u", Tier.ARCHIVAL)] == ["b"]
    assert labels(store.read("u", "x", tier=Tier.CORE)) == ["c"]


def test_users_are_apart_in_every_method(store: SqliteMemoryManager) -> None:
    mine = applied(store.write("alice", "secret", "mine")).block
    store.set_permission("alice", "secret", Permission.FAMILIAR)
    queued = store.write("alice", "secret", "changed")
    assert isinstance(queued, WriteQueued)
    assert store.read("bob", "mine") == [] and store.read("bob", "") == []
    assert store.list("bob") == [] and store.pending("bob") == []
    assert store.delete("bob", mine.id) is False
    with pytest.raises(BlockNotFoundError):
        store.set_permission("bob", "secret", Permission.READONLY)
    assert [b.id for b in store.list("alice")] == [mine.id]
    with pytest.raises(MemoryInputError, match="user id"):
        store.list("")


def test_approving_after_the_block_was_deleted_restores_it(store: SqliteMemoryManager) -> None:
    block = applied(store.write("u", "persona", "formal")).block
    store.set_permission("u", "persona", Permission.FAMILIAR)
    queued = store.write("u", "persona", "casual", Tier.CORE, "asked")
    assert isinstance(queued, WriteQueued)
    with pytest.raises(MemoryPermissionError):
        store.delete("u", block.id)
    store.set_permission("u", "persona", Permission.READWRITE)
    assert store.delete("u", block.id)
    restored = store.approve(queued.mutation.id)
    assert (restored.label, restored.content, restored.tier) == ("persona", "casual", Tier.CORE)
    assert restored.permission is Permission.FAMILIAR


def test_readonly_refusal_names_the_block(store: SqliteMemoryManager) -> None:
    store.write("u", "persona", "x")
    store.set_permission("u", "persona", Permission.READONLY)
    outcome = store.write("u", "Persona", "y")
    assert outcome == WriteRefused(
        error="memory block 'persona' is read-only; it cannot be changed by a tool"
    )


def test_timestamps_come_from_the_clock(tmp_path: Path) -> None:
    times = iter(
        [datetime(2026, 5, 1, 12, 0, tzinfo=UTC), datetime(2026, 5, 1, 13, 0)]  # naive = UTC
    )
    with SqliteMemoryManager(tmp_path / "m.sqlite3", clock=lambda: next(times)) as m:
        first = applied(m.write("u", "a", "x")).block
        second = applied(m.write("u", "a", "y")).block
    assert first.created_at == first.updated_at == datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    assert second.created_at == first.created_at
    assert second.updated_at - first.updated_at == timedelta(hours=1)


# --- the file --------------------------------------------------------------------


def test_the_file_is_wal_versioned_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "memory.sqlite3"
    with SqliteMemoryManager(path) as m:
        block = applied(m.write("u", "birthday", "4 June")).block
        m.set_permission("u", "birthday", Permission.FAMILIAR)
        queued = m.write("u", "birthday", "5 June")
        assert isinstance(queued, WriteQueued)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with SqliteMemoryManager(path) as m:
        [found] = m.read("u", "birthday")
        assert found.block == block.model_copy(update={"permission": Permission.FAMILIAR})
        assert [p.id for p in m.pending("u")] == [queued.mutation.id]


def test_a_file_from_a_newer_toolwire_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    SqliteMemoryManager(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(MemoryStoreError, match="newer"):
        SqliteMemoryManager(path)


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    m = SqliteMemoryManager(tmp_path / "m.sqlite3")
    m.close()
    m.close()  # idempotent
    with pytest.raises(MemoryStoreError, match="closed"):
        m.list("u")


def test_concurrent_writers_on_two_managers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    threads_per_manager, writes_per_thread = 4, 50
    errors: list[BaseException] = []
    with SqliteMemoryManager(path) as first, SqliteMemoryManager(path) as second:

        def writer(manager: SqliteMemoryManager, worker: int) -> None:
            try:
                for i in range(writes_per_thread):
                    applied(manager.write("u", f"w{worker}-{i}", f"note {i} from writer {worker}"))
                    if i % 10 == 0:
                        manager.read("u", f"writer {worker}")
            except BaseException as e:
                errors.append(e)

        threads = [
            threading.Thread(target=writer, args=(manager, n * 2 + k))
            for n in range(threads_per_manager)
            for k, manager in enumerate((first, second))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(first.list("u")) == len(second.list("u")) == 8 * writes_per_thread
    with SqliteMemoryManager(path) as reopened:
        assert len(reopened.list("u")) == 400
        assert len({b.id for b in reopened.list("u")}) == 400
