"""The memory tools through `ToolRegistry.dispatch`, over a real SQLite file
(and, once, over a fake manager: the tools need nothing but the port)."""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import toolwire.builtin.memory as memory_module
from toolwire.builtin.memory import NO_USER, memory_tools
from toolwire.memory import (
    Block,
    MemoryManager,
    MemoryPermissionError,
    Mutation,
    MutationNotFoundError,
    Permission,
    ScoredBlock,
    SqliteMemoryManager,
    Tier,
    WriteOutcome,
    WriteQueued,
    WriteRefused,
)
from toolwire.models import CallContext, ErrorCode, SafetyTier, ToolResult
from toolwire.registry import ToolRegistry

ALICE = CallContext(user_id="alice")
BOB = CallContext(user_id="bob")
TOOLS = ("memory_read", "memory_write", "memory_list", "memory_delete")
VALID_ARGUMENTS: dict[str, dict[str, Any]] = {
    "memory_read": {"query": "coffee"},
    "memory_write": {"label": "prefs", "content": "likes coffee"},
    "memory_list": {},
    "memory_delete": {"id": "blk_0"},
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryManager]:
    with SqliteMemoryManager(tmp_path / "memory.sqlite3") as manager:
        yield manager


@pytest.fixture
def registry(store: SqliteMemoryManager) -> Iterator[ToolRegistry]:
    registry = ToolRegistry()
    for t in memory_tools(store):
        registry.register(t)
    yield registry
    registry.close()


async def write(
    registry: ToolRegistry,
    label: str,
    content: str,
    context: CallContext = ALICE,
    **extra: Any,
) -> ToolResult:
    return await registry.dispatch(
        "memory_write", {"label": label, "content": content, **extra}, context
    )


async def read(
    registry: ToolRegistry, query: str, context: CallContext = ALICE, **extra: Any
) -> Any:
    result = await registry.dispatch("memory_read", {"query": query, **extra}, context)
    assert result.success, result.error
    assert result.structured_output == json.loads(result.output)
    return result.structured_output


async def listing(registry: ToolRegistry, context: CallContext = ALICE, **extra: Any) -> Any:
    result = await registry.dispatch("memory_list", extra, context)
    assert result.success, result.error
    return json.loads(result.output)


# --- definitions ---------------------------------------------------------------


def test_definitions_have_their_tiers_group_and_tier_enum(registry: ToolRegistry) -> None:
    tiers = {d.name: d.safety_tier for d in registry.list(group="memory")}
    assert tiers == {
        "memory_read": SafetyTier.READ_ONLY,
        "memory_list": SafetyTier.READ_ONLY,
        "memory_write": SafetyTier.SIDE_EFFECTING,
        "memory_delete": SafetyTier.SIDE_EFFECTING,
    }
    for name in ("memory_read", "memory_write", "memory_list"):
        definition = registry.get(name)
        assert definition is not None and definition.input_schema is not None
        tier = definition.input_schema["properties"]["tier"]
        assert tier["enum"] == ["core", "working", "archival"]
        assert tier["type"] == "string"
        assert "tier" not in definition.input_schema["required"]
    read_def = registry.get("memory_read")
    assert read_def is not None and read_def.input_schema is not None
    assert read_def.input_schema["required"] == ["query"]
    assert read_def.input_schema["properties"]["limit"]["default"] == 5
    write_def = registry.get("memory_write")
    assert write_def is not None and write_def.input_schema is not None
    assert write_def.input_schema["required"] == ["label", "content"]
    assert "approval" in write_def.description


# --- success paths -------------------------------------------------------------


async def test_write_creates_a_readwrite_working_block(registry: ToolRegistry) -> None:
    result = await write(registry, "preferences", "Prefers dark roast coffee.")
    assert result.success, result.error
    assert result.output.startswith("Memory written: ")
    block = result.structured_output
    assert block["label"] == "preferences"
    assert block["content"] == "Prefers dark roast coffee."
    assert block["tier"] == "working"
    assert block["permission"] == "readwrite"
    assert block["user_id"] == "alice"
    assert block["id"] in result.output


async def test_write_to_an_existing_label_updates_that_block(registry: ToolRegistry) -> None:
    first = await write(registry, "preferences", "tea", tier="core")
    second = await write(registry, "Preferences", "coffee")  # labels ignore case
    assert second.success, second.error
    assert second.structured_output["id"] == first.structured_output["id"]
    assert second.structured_output["content"] == "coffee"
    assert second.structured_output["tier"] == "core"  # kept
    third = await write(registry, "preferences", "coffee", tier="archival")
    assert third.structured_output["tier"] == "archival"
    assert len(await listing(registry)) == 1


async def test_read_returns_ranked_json(registry: ToolRegistry) -> None:
    await write(registry, "garden", "The tomatoes in the garden need water every morning.")
    await write(registry, "coffee", "Alice drinks her coffee black, no sugar, in the morning.")
    await write(registry, "travel", "Flight to Lisbon on the 3rd of May.")
    found = await read(registry, "how does alice take her coffee?")
    assert found, "a relevant block is found"
    assert set(found[0]) == {"id", "label", "tier", "content", "score"}
    assert found[0]["label"] == "coffee"
    assert found[0]["score"] == 1.0
    assert all(f["label"] != "travel" for f in found)
    scores = [f["score"] for f in found]
    assert scores == sorted(scores, reverse=True)


async def test_read_respects_limit_and_tier(registry: ToolRegistry) -> None:
    for i in range(8):
        await write(registry, f"note {i}", f"coffee note number {i}", tier="archival")
    await write(registry, "core coffee", "coffee is a core fact", tier="core")
    assert len(await read(registry, "coffee")) == 5
    assert len(await read(registry, "coffee", limit=2)) == 2
    core = await read(registry, "coffee", tier="core")
    assert [f["label"] for f in core] == ["core coffee"]


async def test_empty_query_returns_the_most_recent_blocks(registry: ToolRegistry) -> None:
    for label in ("first", "second", "third"):
        await write(registry, label, f"the {label} note")
    for query in ("", "   ", "?!"):
        found = await read(registry, query, limit=2)
        assert [f["label"] for f in found] == ["third", "second"]
        assert all(f["score"] == 0 for f in found)


async def test_list_gives_summaries_with_a_preview(registry: ToolRegistry) -> None:
    long_text = "word " * 100
    await write(registry, "long", long_text, tier="archival")
    await write(registry, "persona", "A helpful assistant.", tier="core")
    await write(registry, "todo", "Buy milk.")
    items = await listing(registry)
    assert [i["label"] for i in items] == ["persona", "todo", "long"]  # core, working, archival
    assert set(items[0]) == {"id", "label", "tier", "permission", "preview"}
    long_item = items[2]
    assert len(long_item["preview"]) == 100 and long_item["preview"].endswith("…")
    assert items[0]["preview"] == "A helpful assistant."
    assert [i["label"] for i in await listing(registry, tier="core")] == ["persona"]
    assert await listing(registry, tier="working") != await listing(registry)


async def test_delete_removes_a_block(registry: ToolRegistry) -> None:
    written = await write(registry, "todo", "Buy milk.")
    block_id = written.structured_output["id"]
    result = await registry.dispatch("memory_delete", {"id": block_id}, ALICE)
    assert result.success, result.error
    assert block_id in result.output
    assert await listing(registry) == []
    assert await read(registry, "milk") == []
    again = await registry.dispatch("memory_delete", {"id": block_id}, ALICE)
    assert again.error_code is ErrorCode.INVALID_ARGUMENTS
    assert f"'{block_id}'" in again.error


async def test_unknown_id_is_an_error_naming_it(registry: ToolRegistry) -> None:
    result = await registry.dispatch("memory_delete", {"id": "blk_nope"}, ALICE)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "no memory block with id 'blk_nope'" in result.error


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["memory_read", "memory_write", "memory_list"])
async def test_tier_must_be_one_of_the_three(registry: ToolRegistry, name: str) -> None:
    arguments = {**VALID_ARGUMENTS[name], "tier": "short-term"}
    result = await registry.dispatch(name, arguments, ALICE)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "'tier'" in result.error
    assert "core, working, archival" in result.error


@pytest.mark.parametrize("limit", [0, 51, -3])
async def test_read_limit_is_bounded(registry: ToolRegistry, limit: int) -> None:
    result = await registry.dispatch("memory_read", {"query": "x", "limit": limit}, ALICE)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "'limit'" in result.error


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"content": "x"}, "missing required field 'label'"),
        ({"label": "x"}, "missing required field 'content'"),
        ({"label": "", "content": "x"}, "'label'"),
        ({"label": "   ", "content": "x"}, "'label' is empty"),
        ({"label": "x", "content": " \n "}, "'content' is empty"),
        ({"label": "x" * 201, "content": "x"}, "'label'"),
    ],
)
async def test_write_rejects_bad_input(
    registry: ToolRegistry, arguments: dict[str, Any], problem: str
) -> None:
    result = await registry.dispatch("memory_write", arguments, ALICE)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert problem in result.error
    assert await listing(registry) == []


@pytest.mark.parametrize("name", TOOLS)
@pytest.mark.parametrize(
    "context", [None, CallContext(), CallContext(caller_id="agent"), CallContext(user_id="  ")]
)
async def test_a_call_without_user_id_is_refused(
    registry: ToolRegistry, name: str, context: CallContext | None
) -> None:
    result = await registry.dispatch(name, VALID_ARGUMENTS[name], context)
    assert result.error_code is ErrorCode.DENIED_BY_POLICY
    assert result.error == NO_USER
    assert await listing(registry) == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced quote',
        "*",
        "coffee*",
        "NEAR(",
        "NEAR(coffee milk, 2)",
        "-coffee",
        "coffee AND OR NOT",
        "label:coffee",
        "{label content}: coffee",
        "^coffee",
        "(((",
        "café crème ☕ 咖啡",
        "emoji 🙂 only",
        "\x00\x01",
        "'; DROP TABLE blocks; --",
        "",
        "_",
        "a" * 5000,
        " ".join(f"w{i}" for i in range(500)),
    ],
)
async def test_fts_hostile_queries_never_fail(registry: ToolRegistry, query: str) -> None:
    await write(registry, "coffee", "Coffee with milk and crème brûlée; 咖啡 tastes good")
    found = await read(registry, query)
    assert isinstance(found, list)
    assert len(await listing(registry)) == 1  # and nothing was dropped


async def test_words_are_found_whatever_surrounds_them(registry: ToolRegistry) -> None:
    await write(registry, "coffee", "Coffee with milk and crème brûlée")
    for query in ['"coffee', "coffee*", "NEAR(coffee", "-coffee", "creme", "COFFEES"]:
        assert [f["label"] for f in await read(registry, query)] == ["coffee"], query


# --- users, permissions, approval ----------------------------------------------


async def test_users_cannot_see_or_touch_each_others_blocks(registry: ToolRegistry) -> None:
    written = await write(registry, "secret", "Alice's bank PIN hint: birthday", ALICE)
    alice_id = written.structured_output["id"]
    assert await read(registry, "bank PIN birthday", BOB) == []
    assert await read(registry, "", BOB) == []
    assert await listing(registry, BOB) == []
    deleted = await registry.dispatch("memory_delete", {"id": alice_id}, BOB)
    assert deleted.error_code is ErrorCode.INVALID_ARGUMENTS
    assert f"no memory block with id '{alice_id}'" in deleted.error
    bobs = await write(registry, "secret", "Bob's own secret", BOB)
    assert bobs.structured_output["id"] != alice_id
    alice_sees = await read(registry, "secret")
    assert [f["content"] for f in alice_sees] == ["Alice's bank PIN hint: birthday"]
    assert [i["id"] for i in await listing(registry)] == [alice_id]


async def test_readonly_blocks_cannot_be_changed_or_deleted(
    registry: ToolRegistry, store: SqliteMemoryManager
) -> None:
    written = await write(registry, "persona", "A careful assistant.")
    store.set_permission("alice", "persona", Permission.READONLY)
    for label in ("persona", "PERSONA", "  persona "):
        result = await write(registry, label, "A reckless assistant.")
        assert result.error_code is ErrorCode.DENIED_BY_POLICY
        assert result.error == (
            "memory block 'persona' is read-only; it cannot be changed by a tool"
        )
    deleted = await registry.dispatch(
        "memory_delete", {"id": written.structured_output["id"]}, ALICE
    )
    assert deleted.error_code is ErrorCode.DENIED_BY_POLICY
    assert "read-only" in deleted.error
    [item] = await listing(registry)
    assert item["preview"] == "A careful assistant."
    assert item["permission"] == "readonly"


async def test_familiar_blocks_queue_mutations_for_approval(
    registry: ToolRegistry, store: SqliteMemoryManager
) -> None:
    written = await write(registry, "persona", "Formal tone.", tier="core")
    block_id = written.structured_output["id"]
    store.set_permission("alice", "persona", Permission.FAMILIAR)

    queued = await write(registry, "persona", "Casual tone.", reason="user asked")
    assert queued.success, queued.error
    assert queued.output.startswith("Mutation queued for approval: ")
    mutation_id = queued.structured_output["id"]
    assert mutation_id in queued.output
    [pending] = store.pending("alice")
    assert pending.id == mutation_id
    assert (pending.label, pending.content, pending.reason) == (
        "persona",
        "Casual tone.",
        "user asked",
    )
    assert pending.tier is Tier.CORE
    assert store.pending("bob") == []
    assert [f["content"] for f in await read(registry, "tone")] == ["Formal tone."]

    approved = store.approve(mutation_id)
    assert (approved.id, approved.content) == (block_id, "Casual tone.")
    assert approved.permission is Permission.FAMILIAR
    assert store.pending("alice") == []
    assert [f["content"] for f in await read(registry, "tone")] == ["Casual tone."]

    rejected = await write(registry, "persona", "Pirate tone.")
    store.reject(rejected.structured_output["id"])
    assert store.pending("alice") == []
    assert [f["content"] for f in await read(registry, "tone")] == ["Casual tone."]
    with pytest.raises(MutationNotFoundError):
        store.approve(mutation_id)
    with pytest.raises(MutationNotFoundError):
        store.reject(rejected.structured_output["id"])

    deleted = await registry.dispatch("memory_delete", {"id": block_id}, ALICE)
    assert deleted.error_code is ErrorCode.DENIED_BY_POLICY
    assert "needs approval" in deleted.error


# --- durability and concurrency ------------------------------------------------


async def test_memory_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.sqlite3"
    for attempt in ("before", "after"):
        with SqliteMemoryManager(path) as manager:
            registry = ToolRegistry()
            for t in memory_tools(manager):
                registry.register(t)
            if attempt == "before":
                assert (await write(registry, "birthday", "Alice's birthday is 4 June")).success
            else:
                found = await read(registry, "birthday")
                assert [f["content"] for f in found] == ["Alice's birthday is 4 June"]
            registry.close()


async def test_concurrent_dispatched_writes_all_land(registry: ToolRegistry) -> None:
    written: list[ToolResult] = []

    async def one(i: int) -> None:
        written.append(await write(registry, f"note {i}", f"content {i}"))

    await asyncio.gather(
        *(one(i) for i in range(40)), *(read(registry, "content") for _ in range(10))
    )
    assert all(r.success for r in written), [r.error for r in written if not r.success]
    assert len(await listing(registry)) == 40


# --- the port only ---------------------------------------------------------------


class FakeMemoryManager:
    """Answers from canned values and records the calls: no database at all."""

    def __init__(self, outcome: WriteOutcome) -> None:
        self.calls: builtins.list[tuple[Any, ...]] = []
        self.outcome = outcome
        now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        self.block = Block(
            id="blk_fake",
            user_id="carol",
            label="fake",
            content="canned content",
            tier=Tier.ARCHIVAL,
            permission=Permission.READWRITE,
            created_at=now,
            updated_at=now,
        )

    def read(
        self, user_id: str, query: str, limit: int = 5, tier: Tier | None = None
    ) -> builtins.list[ScoredBlock]:
        self.calls.append(("read", user_id, query, limit, tier))
        return [ScoredBlock(block=self.block, score=0.123456)]

    def write(
        self,
        user_id: str,
        label: str,
        content: str,
        tier: Tier | None = None,
        reason: str = "",
    ) -> WriteOutcome:
        self.calls.append(("write", user_id, label, content, tier, reason))
        return self.outcome

    def list(self, user_id: str, tier: Tier | None = None) -> builtins.list[Block]:
        self.calls.append(("list", user_id, tier))
        return [self.block]

    def delete(self, user_id: str, block_id: str) -> bool:
        self.calls.append(("delete", user_id, block_id))
        if block_id == "blk_locked":
            raise MemoryPermissionError("memory block 'fake' is read-only; no")
        return block_id == "blk_fake"

    def pending(self, user_id: str) -> builtins.list[Mutation]:
        return []

    def approve(self, mutation_id: str) -> Block:
        raise MutationNotFoundError(mutation_id)

    def reject(self, mutation_id: str) -> None:
        raise MutationNotFoundError(mutation_id)

    def set_permission(self, user_id: str, label: str, permission: Permission) -> Block:
        return self.block


async def test_tools_need_only_the_port() -> None:
    mutation = Mutation(
        id="mut_fake",
        user_id="carol",
        label="fake",
        content="new",
        tier=Tier.CORE,
        reason="because",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    fake = FakeMemoryManager(WriteQueued(mutation=mutation))
    assert isinstance(fake, MemoryManager)
    registry = ToolRegistry()
    for t in memory_tools(fake):
        registry.register(t)
    carol = CallContext(user_id="carol")

    found = await registry.dispatch("memory_read", {"query": "q", "tier": "archival"}, carol)
    assert json.loads(found.output) == [
        {
            "id": "blk_fake",
            "label": "fake",
            "tier": "archival",
            "content": "canned content",
            "score": 0.1235,
        }
    ]
    queued = await registry.dispatch(
        "memory_write", {"label": "fake", "content": "new", "reason": "because"}, carol
    )
    assert queued.output.startswith("Mutation queued for approval: ")
    assert queued.structured_output["id"] == "mut_fake"
    fake.outcome = WriteRefused(
        error="memory block 'fake' is read-only; it cannot be changed by a tool"
    )
    refused = await registry.dispatch("memory_write", {"label": "fake", "content": "x"}, carol)
    assert refused.error_code is ErrorCode.DENIED_BY_POLICY
    assert refused.error == fake.outcome.error
    listed = await registry.dispatch("memory_list", {"tier": None}, carol)
    assert json.loads(listed.output)[0]["preview"] == "canned content"
    assert (await registry.dispatch("memory_delete", {"id": "blk_fake"}, carol)).success
    locked = await registry.dispatch("memory_delete", {"id": "blk_locked"}, carol)
    assert locked.error_code is ErrorCode.DENIED_BY_POLICY
    assert fake.calls == [
        ("read", "carol", "q", 5, Tier.ARCHIVAL),
        ("write", "carol", "fake", "new", None, "because"),
        ("write", "carol", "fake", "x", None, ""),
        ("list", "carol", None),
        ("delete", "carol", "blk_fake"),
        ("delete", "carol", "blk_locked"),
    ]
    registry.close()


def test_the_tools_module_imports_the_port_and_no_store() -> None:
    tree = ast.parse(inspect.getsource(memory_module))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    memory_imports = {m for m in imported if m.startswith("toolwire.memory")}
    assert memory_imports == {"toolwire.memory.port"}
    assert "sqlite3" not in imported
