"""The Deno sandbox that runs `execute_code`: TypeScript a model wrote, calling
the registry's tools through generated stubs, with explicit permissions only.

    runtime = DenoRuntime(pool_size=2)
    outcome = await runtime.run(code, stubs=stubs, base_url=url, token=token)
    outcome.ok, outcome.value, outcome.console, outcome.error, outcome.limit_hit
"""

from .models import LimitHit, Limits, RunOutcome
from .runtime import DenoRuntime, SandboxUnavailableError, find_deno

__all__ = [
    "DenoRuntime",
    "LimitHit",
    "Limits",
    "RunOutcome",
    "SandboxUnavailableError",
    "find_deno",
]
