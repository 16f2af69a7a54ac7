"""The default memory store: one SQLite file, searched with FTS5.

Storage. Blocks live in `blocks`, keyed by (user_id, label) with the label
compared case-insensitively (so `Persona` cannot shadow a read-only `persona`);
an FTS5 table with external content (kept in step by triggers) indexes label and
content with the Porter stemmer over `unicode61` (diacritics folded). Pending
mutations live in `mutations`. The schema version is the file's `user_version`;
opening a file migrates it forward inside one transaction, and a file from a
newer toolwire is refused rather than guessed at.

Scoping. Every statement that touches blocks or mutations is filtered by the
user id in its WHERE clause, including lookups by id, so a block id of another
user behaves exactly like an id that does not exist. (BM25's term statistics
are computed over the whole index; only the relative order of a user's own
results can depend on them, never what is returned.)

Ranking. Without an embedding function, `read` ranks by BM25 (label matches
weigh twice as much as content matches). With one, each block stores the
float32 embedding of its label and content, and `read` ranks the user's blocks
by `fts_weight·bm25 + vector_weight·cosine` (BM25 normalized to the best match,
negative cosines as 0, the sum divided by the weights' total). The embedding
function is called outside the lock and the transaction; when it fails, a write
is stored without embedding (computed later, on a read) and a read falls back to
BM25, so a flaky embedding service never costs a memory.

Concurrency. The file is in WAL mode (readers never block the writer) with a
busy timeout, and every write is one `BEGIN IMMEDIATE` transaction, so several
managers and processes can share a file. Within a manager, one connection is
shared by all threads under a lock: the memory tools run in the registry's
worker threads, and their statements take micro- to milliseconds, far less than
what a connection per thread would cost to manage and close.
"""

from __future__ import annotations

import builtins
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from .port import (
    DEFAULT_READ_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_LABEL_CHARS,
    MAX_READ_LIMIT,
    Block,
    BlockNotFoundError,
    EmbedFn,
    MemoryInputError,
    MemoryPermissionError,
    MemoryStoreError,
    Mutation,
    MutationNotFoundError,
    Permission,
    ScoredBlock,
    Tier,
    WriteApplied,
    WriteOutcome,
    WriteQueued,
    WriteRefused,
)
from .search import cosine, fts_query, normalized_bm25, pack, unpack

__all__ = ["DEFAULT_FILENAME", "SCHEMA_VERSION", "SqliteMemoryManager"]

logger = logging.getLogger(__name__)

DEFAULT_FILENAME = "memory.sqlite3"
SCHEMA_VERSION = 1
MAX_REASON_CHARS = 1_000
FTS_CANDIDATES = 1_000
"""In hybrid ranking, the BM25 matches considered (the best ones)."""

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 0 -> 1
    (
        """
        CREATE TABLE blocks (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            label TEXT NOT NULL COLLATE NOCASE,
            content TEXT NOT NULL,
            tier TEXT NOT NULL CHECK (tier IN ('core', 'working', 'archival')),
            permission TEXT NOT NULL
                CHECK (permission IN ('readonly', 'readwrite', 'familiar')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            embedding BLOB,
            UNIQUE (user_id, label)
        )
        """,
        "CREATE INDEX blocks_by_recency ON blocks (user_id, updated_at DESC, seq DESC)",
        """
        CREATE VIRTUAL TABLE blocks_fts USING fts5(
            label, content,
            content = 'blocks', content_rowid = 'seq',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )
        """,
        """
        CREATE TRIGGER blocks_after_insert AFTER INSERT ON blocks BEGIN
            INSERT INTO blocks_fts (rowid, label, content)
            VALUES (new.seq, new.label, new.content);
        END
        """,
        """
        CREATE TRIGGER blocks_after_delete AFTER DELETE ON blocks BEGIN
            INSERT INTO blocks_fts (blocks_fts, rowid, label, content)
            VALUES ('delete', old.seq, old.label, old.content);
        END
        """,
        """
        CREATE TRIGGER blocks_after_update AFTER UPDATE OF label, content ON blocks BEGIN
            INSERT INTO blocks_fts (blocks_fts, rowid, label, content)
            VALUES ('delete', old.seq, old.label, old.content);
            INSERT INTO blocks_fts (rowid, label, content)
            VALUES (new.seq, new.label, new.content);
        END
        """,
        """
        CREATE TABLE mutations (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            label TEXT NOT NULL,
            content TEXT NOT NULL,
            tier TEXT NOT NULL CHECK (tier IN ('core', 'working', 'archival')),
            reason TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX mutations_by_user ON mutations (user_id, created_at, seq)",
    ),
)
assert len(_MIGRATIONS) == SCHEMA_VERSION

_BLOCK_COLUMNS = "id, user_id, label, content, tier, permission, created_at, updated_at"
_TIER_ORDER = "CASE tier WHEN 'core' THEN 0 WHEN 'working' THEN 1 ELSE 2 END"


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SqliteMemoryManager:
    """A `MemoryManager` on a SQLite file (created, with its folder, if missing).

    Args:
        path: The database file.
        embed: Optional embedding function; with it, reads rank by a hybrid of
            BM25 and cosine similarity.
        clock: The current time (an aware datetime; naive ones are taken as UTC).
        fts_weight: Weight of the normalized BM25 score in hybrid ranking.
        vector_weight: Weight of the cosine similarity in hybrid ranking.
        busy_timeout: Seconds to wait for another writer before failing.

    Raises:
        MemoryStoreError: the file is from a newer toolwire, or this SQLite
            lacks FTS5 or WAL.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        embed: EmbedFn | None = None,
        clock: Callable[[], datetime] = _utc_now,
        fts_weight: float = 0.5,
        vector_weight: float = 0.5,
        busy_timeout: float = 10.0,
    ) -> None:
        if fts_weight < 0 or vector_weight < 0 or fts_weight + vector_weight <= 0:
            raise ValueError("fts_weight and vector_weight must be >= 0, and not both 0")
        self.path = Path(path)
        self._embed = embed
        self._clock = clock
        self._fts_weight = fts_weight
        self._vector_weight = vector_weight
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise MemoryStoreError(f"{self.path}: SQLite refused WAL mode (got {mode!r})")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._migrate()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the connection; the manager cannot be used afterwards."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SqliteMemoryManager:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteMemoryManager({str(self.path)!r}, embed={self._embed is not None})"

    def _migrate(self) -> None:
        with self._writing() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise MemoryStoreError(
                    f"{self.path} has memory schema version {version}, newer than this "
                    f"toolwire's ({SCHEMA_VERSION}); open it with a newer toolwire"
                )
            try:
                for statements in _MIGRATIONS[version:]:
                    for statement in statements:
                        conn.execute(statement)
            except sqlite3.OperationalError as e:
                if "fts5" in str(e):
                    raise MemoryStoreError(f"this SQLite has no FTS5 module: {e}") from e
                raise
            if version != SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its start (so it
        never has to upgrade a read lock, which a busy timeout cannot resolve)."""
        with self._lock:
            conn = self._open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # some errors roll back by themselves
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: a consistent snapshot across its statements."""
        with self._lock:
            conn = self._open()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemoryStoreError(f"the memory store {self.path} is closed")
        return self._conn

    def _now(self) -> str:
        now = self._clock()
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        return now.astimezone(UTC).isoformat(timespec="microseconds")

    # --- the port ------------------------------------------------------------

    def read(
        self,
        user_id: str,
        query: str,
        limit: int = DEFAULT_READ_LIMIT,
        tier: Tier | None = None,
    ) -> builtins.list[ScoredBlock]:
        user_id = _user(user_id)
        if not 1 <= limit <= MAX_READ_LIMIT:
            raise MemoryInputError(f"limit must be between 1 and {MAX_READ_LIMIT}; got {limit}")
        tier_value = None if tier is None else Tier(tier).value
        match = fts_query(query)
        if match is None:
            return self._recent(user_id, limit, tier_value)
        query_vector = self._embed_query(query) if self._embed is not None else None
        if query_vector is None:
            return self._bm25(user_id, match, limit, tier_value)
        return self._hybrid(user_id, match, query_vector, limit, tier_value)

    def write(
        self,
        user_id: str,
        label: str,
        content: str,
        tier: Tier | None = None,
        reason: str = "",
    ) -> WriteOutcome:
        user_id = _user(user_id)
        label = _label(label)
        _content(content)
        new_tier = None if tier is None else Tier(tier)
        reason = reason.strip()[:MAX_REASON_CHARS]
        blob = None
        if self._embed is not None and self._permission_of(user_id, label) in (
            None,
            Permission.READWRITE,
        ):
            blob = self._embed_block(label, content)
        now = self._now()
        with self._writing() as conn:
            row = conn.execute(
                f"SELECT seq, {_BLOCK_COLUMNS} FROM blocks WHERE user_id = ? AND label = ?",
                (user_id, label),
            ).fetchone()
            if row is None:
                block_id = _new_id("blk")
                conn.execute(
                    "INSERT INTO blocks (id, user_id, label, content, tier, permission, "
                    "created_at, updated_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        block_id,
                        user_id,
                        label,
                        content,
                        (new_tier or Tier.WORKING).value,
                        Permission.READWRITE.value,
                        now,
                        now,
                        blob,
                    ),
                )
                return WriteApplied(block=_fetch_block(conn, user_id, block_id))
            existing = _block(row)
            if existing.permission is Permission.READONLY:
                return WriteRefused(
                    error=f"memory block '{existing.label}' is read-only; "
                    "it cannot be changed by a tool"
                )
            if existing.permission is Permission.FAMILIAR:
                mutation = Mutation(
                    id=_new_id("mut"),
                    user_id=user_id,
                    label=existing.label,
                    content=content,
                    tier=new_tier or existing.tier,
                    reason=reason,
                    created_at=datetime.fromisoformat(now),
                )
                conn.execute(
                    "INSERT INTO mutations (id, user_id, label, content, tier, reason, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        mutation.id,
                        user_id,
                        mutation.label,
                        content,
                        mutation.tier.value,
                        reason,
                        now,
                    ),
                )
                return WriteQueued(mutation=mutation)
            conn.execute(
                "UPDATE blocks SET content = ?, tier = ?, updated_at = ?, embedding = ? "
                "WHERE seq = ? AND user_id = ?",
                (
                    content,
                    (new_tier or existing.tier).value,
                    now,
                    blob,
                    row["seq"],
                    user_id,
                ),
            )
            return WriteApplied(block=_fetch_block(conn, user_id, existing.id))

    def list(self, user_id: str, tier: Tier | None = None) -> builtins.list[Block]:
        user_id = _user(user_id)
        tier_value = None if tier is None else Tier(tier).value
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE user_id = ?1 "
                f"AND (?2 IS NULL OR tier = ?2) ORDER BY {_TIER_ORDER}, label, seq",
                (user_id, tier_value),
            ).fetchall()
        return [_block(r) for r in rows]

    def delete(self, user_id: str, block_id: str) -> bool:
        user_id = _user(user_id)
        with self._writing() as conn:
            row = conn.execute(
                "SELECT label, permission FROM blocks WHERE id = ? AND user_id = ?",
                (block_id, user_id),
            ).fetchone()
            if row is None:
                return False
            permission = Permission(row["permission"])
            if permission is Permission.READONLY:
                raise MemoryPermissionError(
                    f"memory block '{row['label']}' is read-only; it cannot be deleted by a tool"
                )
            if permission is Permission.FAMILIAR:
                raise MemoryPermissionError(
                    f"memory block '{row['label']}' needs approval for changes; "
                    "it cannot be deleted by a tool"
                )
            conn.execute("DELETE FROM blocks WHERE id = ? AND user_id = ?", (block_id, user_id))
            return True

    def pending(self, user_id: str) -> builtins.list[Mutation]:
        user_id = _user(user_id)
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT id, user_id, label, content, tier, reason, created_at FROM mutations "
                "WHERE user_id = ? ORDER BY created_at, seq",
                (user_id,),
            ).fetchall()
        return [_mutation(r) for r in rows]

    def approve(self, mutation_id: str) -> Block:
        with self._reading() as conn:
            found = _fetch_mutation(conn, mutation_id)
        blob = self._embed_block(found.label, found.content) if self._embed is not None else None
        now = self._now()
        with self._writing() as conn:
            mutation = _fetch_mutation(conn, mutation_id)  # still pending?
            conn.execute("DELETE FROM mutations WHERE id = ?", (mutation_id,))
            row = conn.execute(
                "SELECT id FROM blocks WHERE user_id = ? AND label = ?",
                (mutation.user_id, mutation.label),
            ).fetchone()
            if row is None:  # deleted meanwhile: the approved content brings it back
                block_id = _new_id("blk")
                conn.execute(
                    "INSERT INTO blocks (id, user_id, label, content, tier, permission, "
                    "created_at, updated_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        block_id,
                        mutation.user_id,
                        mutation.label,
                        mutation.content,
                        mutation.tier.value,
                        Permission.FAMILIAR.value,
                        now,
                        now,
                        blob,
                    ),
                )
            else:
                block_id = row["id"]
                conn.execute(
                    "UPDATE blocks SET content = ?, tier = ?, updated_at = ?, embedding = ? "
                    "WHERE id = ? AND user_id = ?",
                    (mutation.content, mutation.tier.value, now, blob, block_id, mutation.user_id),
                )
            return _fetch_block(conn, mutation.user_id, block_id)

    def reject(self, mutation_id: str) -> None:
        with self._writing() as conn:
            gone = conn.execute("DELETE FROM mutations WHERE id = ?", (mutation_id,)).rowcount
        if not gone:
            raise MutationNotFoundError(f"no pending mutation with id '{mutation_id}'")

    def set_permission(self, user_id: str, label: str, permission: Permission) -> Block:
        user_id = _user(user_id)
        label = _label(label)
        permission = Permission(permission)
        with self._writing() as conn:
            row = conn.execute(
                "SELECT id FROM blocks WHERE user_id = ? AND label = ?", (user_id, label)
            ).fetchone()
            if row is None:
                raise BlockNotFoundError(f"user '{user_id}' has no memory block '{label}'")
            conn.execute(
                "UPDATE blocks SET permission = ? WHERE id = ? AND user_id = ?",
                (permission.value, row["id"], user_id),
            )
            return _fetch_block(conn, user_id, row["id"])

    # --- reading -------------------------------------------------------------

    def _recent(self, user_id: str, limit: int, tier: str | None) -> builtins.list[ScoredBlock]:
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE user_id = ?1 "
                "AND (?2 IS NULL OR tier = ?2) ORDER BY updated_at DESC, seq DESC LIMIT ?3",
                (user_id, tier, limit),
            ).fetchall()
        return [ScoredBlock(block=_block(r), score=0.0) for r in rows]

    def _bm25(
        self, user_id: str, match: str, limit: int, tier: str | None
    ) -> builtins.list[ScoredBlock]:
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {', '.join('b.' + c for c in _BLOCK_COLUMNS.split(', '))}, "
                "bm25(blocks_fts, 2.0, 1.0) AS rank "
                "FROM blocks_fts JOIN blocks AS b ON b.seq = blocks_fts.rowid "
                "WHERE blocks_fts MATCH ?1 AND b.user_id = ?2 AND (?3 IS NULL OR b.tier = ?3) "
                "ORDER BY rank, b.seq LIMIT ?4",
                (match, user_id, tier, limit),
            ).fetchall()
        scores = normalized_bm25({r["id"]: r["rank"] for r in rows})
        return [ScoredBlock(block=_block(r), score=scores[r["id"]]) for r in rows]

    def _hybrid(
        self,
        user_id: str,
        match: str,
        query_vector: Sequence[float],
        limit: int,
        tier: str | None,
    ) -> builtins.list[ScoredBlock]:
        with self._reading() as conn:
            ranks = {
                r["id"]: r["rank"]
                for r in conn.execute(
                    "SELECT b.id AS id, bm25(blocks_fts, 2.0, 1.0) AS rank "
                    "FROM blocks_fts JOIN blocks AS b ON b.seq = blocks_fts.rowid "
                    "WHERE blocks_fts MATCH ?1 AND b.user_id = ?2 "
                    "AND (?3 IS NULL OR b.tier = ?3) ORDER BY rank LIMIT ?4",
                    (match, user_id, tier, FTS_CANDIDATES),
                )
            }
            vectors: dict[str, bytes | None] = {
                r["id"]: r["embedding"]
                for r in conn.execute(
                    "SELECT id, embedding FROM blocks WHERE user_id = ?1 "
                    "AND (?2 IS NULL OR tier = ?2)",
                    (user_id, tier),
                )
            }
        size = 4 * len(query_vector)
        stale = [i for i, blob in vectors.items() if blob is None or len(blob) != size]
        if stale:
            vectors.update(self._backfill(user_id, stale))
        text_scores = normalized_bm25(ranks)
        total = self._fts_weight + self._vector_weight
        scores: dict[str, float] = {}
        for block_id, blob in vectors.items():
            similarity = cosine(query_vector, unpack(blob)) if blob else 0.0
            score = (
                self._fts_weight * text_scores.get(block_id, 0.0)
                + self._vector_weight * max(0.0, similarity)
            ) / total
            if score > 0:
                scores[block_id] = score
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        if not best:
            return []
        with self._reading() as conn:
            marks = ", ".join("?" * len(best))
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE user_id = ? AND id IN ({marks})",
                (user_id, *(i for i, _ in best)),
            ).fetchall()
        found = {r["id"]: _block(r) for r in rows}
        return [ScoredBlock(block=found[i], score=s) for i, s in best if i in found]

    # --- embeddings ----------------------------------------------------------

    def _permission_of(self, user_id: str, label: str) -> Permission | None:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT permission FROM blocks WHERE user_id = ? AND label = ?", (user_id, label)
            ).fetchone()
        return None if row is None else Permission(row["permission"])

    def _embed_texts(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]] | None:
        """The embeddings, or None (logged) when the embedding function fails."""
        assert self._embed is not None
        try:
            vectors = [[float(x) for x in v] for v in self._embed(texts)]
            if len(vectors) != len(texts):
                raise ValueError(f"{len(texts)} texts in, {len(vectors)} vectors out")
        except Exception:
            logger.warning("memory: the embedding function failed", exc_info=True)
            return None
        return vectors

    def _embed_query(self, query: str) -> builtins.list[float] | None:
        vectors = self._embed_texts([query])
        return None if vectors is None else vectors[0]

    def _embed_block(self, label: str, content: str) -> bytes | None:
        vectors = self._embed_texts([_embedding_text(label, content)])
        return None if vectors is None else pack(vectors[0])

    def _backfill(self, user_id: str, block_ids: Sequence[str]) -> dict[str, bytes | None]:
        """Embeddings for blocks stored without one (or with one of another
        size: the embedding function changed); stored unless the block changed
        meanwhile."""
        with self._reading() as conn:
            marks = ", ".join("?" * len(block_ids))
            rows = conn.execute(
                f"SELECT id, label, content FROM blocks WHERE user_id = ? AND id IN ({marks})",
                (user_id, *block_ids),
            ).fetchall()
        if not rows:
            return {}
        vectors = self._embed_texts([_embedding_text(r["label"], r["content"]) for r in rows])
        if vectors is None:
            return {}
        blobs = {r["id"]: pack(v) for r, v in zip(rows, vectors, strict=True)}
        with self._writing() as conn:
            conn.executemany(
                "UPDATE blocks SET embedding = ? WHERE id = ? AND user_id = ? "
                "AND label = ? AND content = ?",
                [(blobs[r["id"]], r["id"], user_id, r["label"], r["content"]) for r in rows],
            )
        return dict(blobs)


# --- rows and arguments ------------------------------------------------------


def _embedding_text(label: str, content: str) -> str:
    return f"{label}\n\n{content}"


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def _block(row: sqlite3.Row) -> Block:
    return Block(
        id=row["id"],
        user_id=row["user_id"],
        label=row["label"],
        content=row["content"],
        tier=Tier(row["tier"]),
        permission=Permission(row["permission"]),
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
    )


def _mutation(row: sqlite3.Row) -> Mutation:
    return Mutation(
        id=row["id"],
        user_id=row["user_id"],
        label=row["label"],
        content=row["content"],
        tier=Tier(row["tier"]),
        reason=row["reason"],
        created_at=datetime.fromisoformat(row["created_at"]),
    )


def _fetch_block(conn: sqlite3.Connection, user_id: str, block_id: str) -> Block:
    row = conn.execute(
        f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE id = ? AND user_id = ?", (block_id, user_id)
    ).fetchone()
    assert row is not None, "read back inside the transaction that wrote it"
    return _block(row)


def _fetch_mutation(conn: sqlite3.Connection, mutation_id: str) -> Mutation:
    row = conn.execute(
        "SELECT id, user_id, label, content, tier, reason, created_at FROM mutations WHERE id = ?",
        (mutation_id,),
    ).fetchone()
    if row is None:
        raise MutationNotFoundError(f"no pending mutation with id '{mutation_id}'")
    return _mutation(row)


def _user(user_id: str) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise MemoryInputError("a user id is required: memory is kept per user")
    return user_id


def _label(label: str) -> str:
    normalized = " ".join(label.split())
    if not normalized:
        raise MemoryInputError("'label' is empty; name the memory block, e.g. 'preferences'")
    if len(normalized) > MAX_LABEL_CHARS:
        raise MemoryInputError(
            f"'label' is {len(normalized)} characters; the limit is {MAX_LABEL_CHARS}"
        )
    return normalized


def _content(content: str) -> None:
    if not content.strip():
        raise MemoryInputError("'content' is empty; to remove a memory block, delete it")
    if len(content) > MAX_CONTENT_CHARS:
        raise MemoryInputError(
            f"'content' is {len(content):,} characters; the limit is {MAX_CONTENT_CHARS:,}"
        )
