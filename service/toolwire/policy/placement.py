"""Layer 3 of the policy: where a call runs, and under which constraints.

Each tool states where it runs and which constraints its runtime can enforce
(`Sandboxing`); the configuration may tighten them per tool. A constraint the
tool cannot enforce is never reported as if it held: the call is denied, so a
configuration that says "no network for exec" fails closed rather than open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from toolwire.models import Runtime, SandboxPlacement

from .rules import Denial


class Constraint(StrEnum):
    NETWORK = "network"
    MEMORY = "memory"


@dataclass(frozen=True, slots=True)
class Sandboxing:
    """Where a tool runs by default, and what its runtime can change per call."""

    placement: SandboxPlacement = field(default_factory=SandboxPlacement)
    adjustable: frozenset[Constraint] = frozenset()


HOST = Sandboxing()
"""An in-process handler: the host, with the server's network and memory."""
PROVIDER = Sandboxing(SandboxPlacement(runtime=Runtime.PROVIDER))
"""A remote provider's tool: toolwire cannot constrain another process."""


class SandboxOverride(BaseModel):
    """The configuration's constraints for one tool (`[sandbox.<tool>]`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    network: bool | None = None
    memory_mb: int | None = Field(default=None, gt=0)


def resolve_placement(
    name: str, sandboxing: Sandboxing, override: SandboxOverride | None
) -> SandboxPlacement | Denial:
    placement = sandboxing.placement
    if override is None:
        return placement
    where = f"sandbox.{name}"
    update: dict[str, object] = {}
    if override.network is not None and override.network != placement.network:
        if Constraint.NETWORK not in sandboxing.adjustable:
            return Denial(
                f"{where}.network",
                f"'{name}' runs on {placement.runtime.value}, which cannot "
                f"{'deny' if not override.network else 'grant'} it network access; "
                "the configuration asks for what toolwire cannot enforce, so the call is refused",
            )
        update["network"] = override.network
    if override.memory_mb is not None:
        if Constraint.MEMORY not in sandboxing.adjustable:
            return Denial(
                f"{where}.memory_mb",
                f"'{name}' runs on {placement.runtime.value}, which cannot cap its memory; "
                "the configuration asks for what toolwire cannot enforce, so the call is refused",
            )
        cap = override.memory_mb * 1024 * 1024
        current = placement.memory_limit_bytes
        update["memory_limit_bytes"] = cap if current is None else min(cap, current)
    return placement.model_copy(update=update) if update else placement
