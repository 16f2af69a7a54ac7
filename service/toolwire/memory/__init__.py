"""Per-user memory: the port the memory tools use, and the default SQLite store.

from toolwire.memory import SqliteMemoryManager
from toolwire.builtin.memory import memory_tools

manager = SqliteMemoryManager(data_dir / "memory.sqlite3")
for t in memory_tools(manager):
    registry.register(t)
"""

from .port import (
    DEFAULT_READ_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_LABEL_CHARS,
    MAX_READ_LIMIT,
    Block,
    BlockNotFoundError,
    EmbedFn,
    MemoryInputError,
    MemoryManager,
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
from .sqlite import DEFAULT_FILENAME, SCHEMA_VERSION, SqliteMemoryManager

__all__ = [
    "DEFAULT_FILENAME",
    "DEFAULT_READ_LIMIT",
    "MAX_CONTENT_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_READ_LIMIT",
    "SCHEMA_VERSION",
    "Block",
    "BlockNotFoundError",
    "EmbedFn",
    "MemoryInputError",
    "MemoryManager",
    "MemoryPermissionError",
    "MemoryStoreError",
    "Mutation",
    "MutationNotFoundError",
    "Permission",
    "ScoredBlock",
    "SqliteMemoryManager",
    "Tier",
    "WriteApplied",
    "WriteOutcome",
    "WriteQueued",
    "WriteRefused",
]
