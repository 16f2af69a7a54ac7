"""The memory tools: `memory_read`, `memory_write`, `memory_list`, `memory_delete`.

`memory_tools(manager)` builds them over any `MemoryManager`; they know the
port and nothing else (no store, no globals), so a test or a deployment can
hand them any implementation.

Memory is kept per user: every call uses the call context's `user_id` as the
namespace, and a call without one fails (denied by policy) instead of falling
back to a shared namespace. What a block's permission forbids (changing or
deleting a read-only block, deleting one whose changes need approval) fails the
same way, with the store's explanation; bad input the schema cannot catch (a
label of blanks) fails as invalid arguments; only real breakage (the database)
is a handler error.

The handlers are synchronous on purpose. The port is synchronous (SQLite
blocks), and the registry runs sync handlers in its bounded worker pool, where
a call that overruns its timeout is reported, flagged and counted as abandoned.
An `async` handler wrapping `asyncio.to_thread` would block the same way but in
the default executor, outside that accounting, and its cancellation would stop
only the waiting, not the work.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from toolwire.declare import tool
from toolwire.memory.port import (
    DEFAULT_READ_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_LABEL_CHARS,
    MAX_READ_LIMIT,
    Block,
    MemoryInputError,
    MemoryManager,
    MemoryPermissionError,
    Tier,
    WriteApplied,
    WriteQueued,
    WriteRefused,
)
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.tools import Tool, ToolContext
from toolwire.validation import ArgumentError

__all__ = ["GROUP", "NO_USER", "PREVIEW_CHARS", "memory_tools"]

GROUP = "memory"
PREVIEW_CHARS = 100
NO_USER = (
    "memory tools need a user id in the call context (CallContext.user_id); memory is kept per user"
)

TierName = Literal["core", "working", "archival"]


def _no_default(schema: JsonDict) -> None:
    schema.pop("default", None)


OptionalTier = Annotated[TierName | SkipJsonSchema[None], Field(json_schema_extra=_no_default)]
"""A tier or nothing (any tier for reads and lists; keep, or `working`, for
writes). Its schema is the bare enum, not an anyOf with null: the model sees the
three values, and a wrong one is answered with "must be one of core, working,
archival". A null (as OpenAI strict mode sends) counts as absent."""

READ_DESCRIPTION = (
    "Search memory by relevance. Returns matching memory blocks ranked best first, as a "
    "JSON list of {id, label, tier, content, score}. A query without words returns the "
    "most recently updated blocks."
)
WRITE_DESCRIPTION = (
    "Write or update a memory block. The label names the block: writing an existing "
    "label replaces its content, a new label creates a block. Some blocks require "
    "approval (the change is queued until it is approved) and some are read-only."
)
LIST_DESCRIPTION = (
    "List memory blocks, optionally filtered by tier: id, label, tier, permission and "
    "the beginning of the content."
)
DELETE_DESCRIPTION = (
    "Delete a memory block by its id (as memory_list or memory_read show it). "
    "Read-only blocks and blocks that require approval cannot be deleted."
)


def memory_tools(manager: MemoryManager) -> list[Tool]:
    """The memory tools over `manager`, ready to register (group "memory")."""

    @tool(
        name="memory_read",
        description=READ_DESCRIPTION,
        safety_tier=SafetyTier.READ_ONLY,
        group=GROUP,
    )
    def memory_read(
        query: str,
        context: ToolContext,
        limit: Annotated[int, Field(ge=1, le=MAX_READ_LIMIT)] = DEFAULT_READ_LIMIT,
        tier: OptionalTier = None,
    ) -> ToolResult:
        """Args:
        query: What to look for, in plain words.
        limit: How many blocks to return at most.
        tier: Search only this tier (core, working or archival); all tiers by default.
        """
        user_id = _user(context)
        if user_id is None:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, NO_USER)
        try:
            found = manager.read(user_id, query, limit, _tier(tier))
        except MemoryInputError as e:
            raise ArgumentError(str(e)) from e
        items = [
            {
                "id": s.block.id,
                "label": s.block.label,
                "tier": s.block.tier.value,
                "content": s.block.content,
                "score": round(s.score, 4),
            }
            for s in found
        ]
        return ToolResult.ok(_json(items), items)

    @tool(
        name="memory_write",
        description=WRITE_DESCRIPTION,
        safety_tier=SafetyTier.SIDE_EFFECTING,
        group=GROUP,
    )
    def memory_write(
        label: Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)],
        content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)],
        context: ToolContext,
        tier: OptionalTier = None,
        reason: str = "",
    ) -> ToolResult:
        """Args:
        label: The block's name, e.g. 'preferences'; an existing label is updated.
        content: The block's full new content.
        tier: core, working or archival; a new block defaults to working, an
            existing one keeps its tier.
        reason: Why this change; shown to whoever approves it.
        """
        user_id = _user(context)
        if user_id is None:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, NO_USER)
        try:
            outcome = manager.write(user_id, label, content, _tier(tier), reason)
        except MemoryInputError as e:
            raise ArgumentError(str(e)) from e
        if isinstance(outcome, WriteApplied):
            block = outcome.block
            details = {**_summary(block), "updated_at": block.updated_at.isoformat()}
            return ToolResult.ok(f"Memory written: {_json(details)}", block.model_dump(mode="json"))
        if isinstance(outcome, WriteQueued):
            mutation = outcome.mutation
            details = {
                "mutation_id": mutation.id,
                "label": mutation.label,
                "tier": mutation.tier.value,
                "reason": mutation.reason,
            }
            return ToolResult.ok(
                f"Mutation queued for approval: {_json(details)}; the block changes once "
                "it is approved",
                mutation.model_dump(mode="json"),
            )
        assert isinstance(outcome, WriteRefused)
        return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, outcome.error)

    @tool(
        name="memory_list",
        description=LIST_DESCRIPTION,
        safety_tier=SafetyTier.READ_ONLY,
        group=GROUP,
    )
    def memory_list(context: ToolContext, tier: OptionalTier = None) -> ToolResult:
        """Args:
        tier: List only this tier (core, working or archival); all tiers by default.
        """
        user_id = _user(context)
        if user_id is None:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, NO_USER)
        items = [_summary(b) for b in manager.list(user_id, _tier(tier))]
        return ToolResult.ok(_json(items), items)

    @tool(
        name="memory_delete",
        description=DELETE_DESCRIPTION,
        safety_tier=SafetyTier.SIDE_EFFECTING,
        group=GROUP,
    )
    def memory_delete(id: Annotated[str, Field(min_length=1)], context: ToolContext) -> ToolResult:
        """Args:
        id: The block's id.
        """
        user_id = _user(context)
        if user_id is None:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, NO_USER)
        try:
            deleted = manager.delete(user_id, id)
        except MemoryPermissionError as e:
            return ToolResult.fail(ErrorCode.DENIED_BY_POLICY, str(e))
        if not deleted:
            return ToolResult.fail(
                ErrorCode.INVALID_ARGUMENTS,
                f"no memory block with id '{id}'; memory_list shows the ids of your blocks",
            )
        return ToolResult.ok(f"Memory block '{id}' deleted.", {"id": id, "deleted": True})

    return [memory_read.tool, memory_write.tool, memory_list.tool, memory_delete.tool]


def _user(context: ToolContext) -> str | None:
    user_id = context.call.user_id
    return user_id if user_id.strip() else None


def _tier(name: str | None) -> Tier | None:
    return None if name is None else Tier(name)


def _summary(block: Block) -> dict[str, Any]:
    text = " ".join(block.content.split())
    preview = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return {
        "id": block.id,
        "label": block.label,
        "tier": block.tier.value,
        "permission": block.permission.value,
        "preview": preview,
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
