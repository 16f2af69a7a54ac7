"""The memory port: what the memory tools need from a store, and nothing more.

Memory is a set of *blocks* per user. A block's label is its key within the
user's memory (writing an existing label updates that block), its tier says how
central it is (`core` facts always matter, `working` notes for now, `archival`
for the long tail), and its permission says what a tool may do with it:

- `readwrite`: tools change it at once;
- `familiar`: a tool's change is queued as a pending `Mutation` that an
  operator approves or rejects;
- `readonly`: tools cannot change it at all.

Every method takes the user id explicitly: a store keeps each user's blocks
apart and never answers one user's call with another's blocks. The approval
side (`pending`, `approve`, `reject`, `set_permission`) is for operators and is
never exposed as a tool.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from toolwire.errors import ToolwireError

__all__ = [
    "DEFAULT_READ_LIMIT",
    "MAX_CONTENT_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_READ_LIMIT",
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
    "Tier",
    "WriteApplied",
    "WriteOutcome",
    "WriteQueued",
    "WriteRefused",
]

DEFAULT_READ_LIMIT = 5
MAX_READ_LIMIT = 50
MAX_LABEL_CHARS = 200
MAX_CONTENT_CHARS = 50_000

EmbedFn = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts in, one vector per text out (same order, same dimension for all).

Optional: a store given one ranks reads by a hybrid of full-text and semantic
similarity. It is called from worker threads, outside any database lock."""


class Tier(StrEnum):
    CORE = "core"
    WORKING = "working"
    ARCHIVAL = "archival"


class Permission(StrEnum):
    READONLY = "readonly"
    READWRITE = "readwrite"
    FAMILIAR = "familiar"


_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Block(BaseModel):
    """One piece of a user's memory."""

    model_config = _FROZEN

    id: str
    user_id: str
    label: str
    content: str
    tier: Tier
    permission: Permission
    created_at: datetime
    updated_at: datetime


class ScoredBlock(BaseModel):
    """A block found by `read`; `score` is its relevance in [0, 1], relative to
    the other results of the same read (1 is the best match)."""

    model_config = _FROZEN

    block: Block
    score: float


class Mutation(BaseModel):
    """A change to a `familiar` block, waiting for an operator's approval."""

    model_config = _FROZEN

    id: str
    user_id: str
    label: str
    content: str
    tier: Tier
    reason: str
    created_at: datetime


class WriteApplied(BaseModel):
    """The write is done; `block` is the block as it is now."""

    model_config = _FROZEN

    status: Literal["applied"] = "applied"
    block: Block


class WriteQueued(BaseModel):
    """The block needs approval for changes; the write waits as `mutation`."""

    model_config = _FROZEN

    status: Literal["queued"] = "queued"
    mutation: Mutation


class WriteRefused(BaseModel):
    """The write is not allowed (a read-only block); `error` says why, for the model."""

    model_config = _FROZEN

    status: Literal["refused"] = "refused"
    error: str


WriteOutcome = Annotated[WriteApplied | WriteQueued | WriteRefused, Field(discriminator="status")]
"""What became of a write: applied, queued for approval, or refused."""


class MemoryStoreError(ToolwireError):
    """Base of the memory port's exceptions."""


class MemoryInputError(MemoryStoreError, ValueError):
    """An argument a store cannot use (an empty label, a limit out of range);
    the message is written for the model."""


class MemoryPermissionError(MemoryStoreError):
    """A block's permission forbids what was asked; the message says which block."""


class BlockNotFoundError(MemoryStoreError, LookupError):
    """No block of that user with that label."""


class MutationNotFoundError(MemoryStoreError, LookupError):
    """No pending mutation with that id (never queued, or already decided)."""


@runtime_checkable
class MemoryManager(Protocol):
    """A per-user memory store. Methods are synchronous (stores do blocking
    I/O; callers in an event loop run them in a worker thread) and safe to call
    from several threads at once."""

    def read(
        self,
        user_id: str,
        query: str,
        limit: int = DEFAULT_READ_LIMIT,
        tier: Tier | None = None,
    ) -> builtins.list[ScoredBlock]:
        """The user's blocks most relevant to `query`, best first, at most
        `limit` (1..MAX_READ_LIMIT). A query without any word returns the most
        recently updated blocks (score 0). Raises MemoryInputError."""
        ...

    def write(
        self,
        user_id: str,
        label: str,
        content: str,
        tier: Tier | None = None,
        reason: str = "",
    ) -> WriteOutcome:
        """Create the block `label` (readwrite; tier `working` unless given) or
        update it as its permission allows; `tier` None keeps a block's tier.
        Raises MemoryInputError."""
        ...

    def list(self, user_id: str, tier: Tier | None = None) -> builtins.list[Block]:
        """The user's blocks, core first, then working, then archival; by label within a tier."""
        ...

    def delete(self, user_id: str, block_id: str) -> bool:
        """Delete one of the user's blocks; False if the user has no block with
        that id. Raises MemoryPermissionError for a block tools may not delete
        (readonly, or familiar: deleting would bypass its approval)."""
        ...

    def pending(self, user_id: str) -> builtins.list[Mutation]:
        """The user's mutations waiting for approval, oldest first."""
        ...

    def approve(self, mutation_id: str) -> Block:
        """Apply a pending mutation (the operator's decision overrides the
        block's permission) and forget it. Raises MutationNotFoundError."""
        ...

    def reject(self, mutation_id: str) -> None:
        """Discard a pending mutation. Raises MutationNotFoundError."""
        ...

    def set_permission(self, user_id: str, label: str, permission: Permission) -> Block:
        """Change what tools may do with a block. Raises BlockNotFoundError."""
        ...
