"""The registry's management operations: names, duplicates, forms, listing."""

from __future__ import annotations

import threading

import pytest
from toolwire.errors import (
    DuplicateToolError,
    InvalidDefinitionError,
    NotOwnerError,
    ToolNotFoundError,
)
from toolwire.models import ParameterType, SafetyTier, ToolDefinition, ToolParameter
from toolwire.registry import ToolRegistry
from toolwire.tools import Tool


def _noop(arguments: object, context: object) -> str:
    return "ok"


def make(name: str, **fields: object) -> Tool:
    return Tool.of(ToolDefinition(name=name, **fields), _noop)  # type: ignore[arg-type]


def test_register_fills_in_the_schema_from_parameters() -> None:
    registry = ToolRegistry()
    stored = registry.register(
        make(
            "read",
            parameters=(
                ToolParameter(name="path", type=ParameterType.STRING, required=True),
                ToolParameter(name="tier", type=ParameterType.STRING, enum_values=("a", "b")),
            ),
        )
    )
    assert stored.input_schema == {
        "type": "object",
        "properties": {"path": {"type": "string"}, "tier": {"type": "string", "enum": ["a", "b"]}},
        "required": ["path"],
        "additionalProperties": False,
    }
    assert registry.get("read") == stored


def test_register_fills_in_parameters_from_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "query"},
            "n": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["q"],
    }
    stored = ToolRegistry().register(make("search", input_schema=schema))
    assert [(p.name, p.type, p.required) for p in stored.parameters] == [
        ("q", ParameterType.STRING, True),
        ("n", ParameterType.INTEGER, False),
        ("tags", ParameterType.ARRAY, False),
    ]
    assert stored.parameters[0].description == "query"
    assert stored.parameters[1].json_schema == {"minimum": 1}
    assert stored.input_schema == schema


def test_duplicate_is_rejected_with_a_free_alternative() -> None:
    registry = ToolRegistry()
    registry.register(make("search"))
    registry.register(make("search_2"))
    with pytest.raises(DuplicateToolError) as caught:
        registry.register(make("search"))
    assert caught.value.suggestion == "search_3"
    assert "already exists" in str(caught.value) and "'search_3'" in str(caught.value)


def test_suggestion_stays_within_the_name_limit() -> None:
    registry = ToolRegistry()
    long_name = "x" * 64
    registry.register(make(long_name))
    with pytest.raises(DuplicateToolError) as caught:
        registry.register(make(long_name))
    assert len(caught.value.suggestion) == 64 and caught.value.suggestion.endswith("_2")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "cannot be empty"),
        ("x" * 65, "65 characters long; the limit is 64"),
        ("read file", "' '"),
        ("tools.read", "'.'"),
        ("naïve", "'ï'"),
    ],
)
def test_invalid_names_are_rejected_clearly(name: str, fragment: str) -> None:
    with pytest.raises(InvalidDefinitionError) as caught:
        ToolRegistry().register(make(name))
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON Schema"),
        ({"type": "object", "properties": {"a": {"pattern": "(["}}}, '"([" is not a "regex"'),
        ({"type": "array"}, "must describe an object"),
        ({"type": "object", "$ref": "#/$defs/missing"}, "cannot be compiled"),
        (
            {"type": "object", "properties": {}, "required": ["x"], "additionalProperties": False},
            "requires 'x'",
        ),
    ],
)
def test_invalid_schemas_are_rejected_at_registration(
    schema: dict[str, object], fragment: str
) -> None:
    with pytest.raises(InvalidDefinitionError) as caught:
        ToolRegistry().register(make("t", input_schema=schema))
    assert fragment in str(caught.value)


def test_both_forms_must_agree() -> None:
    with pytest.raises(InvalidDefinitionError, match="disagree"):
        ToolRegistry().register(
            make(
                "t",
                parameters=(ToolParameter(name="a", type=ParameterType.STRING, required=True),),
                input_schema={"type": "object", "properties": {"b": {"type": "string"}}},
            )
        )


def test_enum_values_only_for_strings() -> None:
    with pytest.raises(InvalidDefinitionError, match="enum_values are for string"):
        ToolRegistry().register(
            make(
                "t",
                parameters=(
                    ToolParameter(name="n", type=ParameterType.INTEGER, enum_values=("1",)),
                ),
            )
        )


def test_list_is_sorted_and_filtered() -> None:
    registry = ToolRegistry()
    registry.register(make("web_fetch", group="web", safety_tier=SafetyTier.SIDE_EFFECTING))
    registry.register(make("memory_read", group="memory", safety_tier=SafetyTier.READ_ONLY))
    registry.register(make("memory_write", group="memory"))
    assert [t.name for t in registry.list()] == ["memory_read", "memory_write", "web_fetch"]
    assert [t.name for t in registry.list(group="memory")] == ["memory_read", "memory_write"]
    assert [t.name for t in registry.list(tier=SafetyTier.READ_ONLY)] == ["memory_read"]
    assert [t.name for t in registry.list(name_prefix="web")] == ["web_fetch"]


def test_unregister_and_ownership() -> None:
    registry = ToolRegistry()
    registry.register(make("mine"), owner="p1")
    with pytest.raises(NotOwnerError):
        registry.unregister("mine", owner="p2")
    registry.unregister("mine", owner="p1")
    assert registry.get("mine") is None
    with pytest.raises(ToolNotFoundError):
        registry.unregister("mine")


def test_unregister_owner_removes_only_that_providers_tools() -> None:
    registry = ToolRegistry()
    registry.register(make("a"), owner="p1")
    registry.register(make("b"), owner="p1")
    registry.register(make("c"), owner="p2")
    before = registry.version
    assert sorted(registry.unregister_owner("p1")) == ["a", "b"]
    assert [t.name for t in registry.list()] == ["c"]
    assert registry.version > before


def test_concurrent_registration_loses_nothing() -> None:
    registry = ToolRegistry()
    errors: list[Exception] = []

    def register_many(prefix: str) -> None:
        for i in range(200):
            try:
                registry.register(make(f"{prefix}_{i}"))
            except Exception as e:  # pragma: no cover - would fail the test below
                errors.append(e)

    threads = [threading.Thread(target=register_many, args=(f"t{n}",)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(registry.list()) == 1600


def test_racing_duplicates_admit_exactly_one() -> None:
    registry = ToolRegistry()
    outcomes: list[str] = []
    barrier = threading.Barrier(16)

    def race() -> None:
        barrier.wait()
        try:
            registry.register(make("contested"))
            outcomes.append("won")
        except DuplicateToolError:
            outcomes.append("lost")

    threads = [threading.Thread(target=race) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("won") == 1 and outcomes.count("lost") == 15
