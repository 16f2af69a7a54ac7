"""Tools from Python modules named on the command line (`--tools pkg.module`)."""

from __future__ import annotations

import importlib
from types import ModuleType

from .declare import DeclaredTool
from .models import ToolDefinition
from .registry import ToolRegistry
from .tools import Tool


def load_tool_module(registry: ToolRegistry, module_name: str) -> list[ToolDefinition]:
    """Import a module and register its tools (see `register_module_tools`).

    Raises ImportError, or the registry's errors, with the module named.
    """
    return register_module_tools(registry, importlib.import_module(module_name))


def register_module_tools(registry: ToolRegistry, module: ModuleType) -> list[ToolDefinition]:
    """Register every `@tool` function and `Tool` defined at the module's top level."""
    module_name = module.__name__
    found = [
        value.tool if isinstance(value, DeclaredTool) else value
        for value in vars(module).values()
        if isinstance(value, DeclaredTool | Tool)
    ]
    if not found:
        raise ImportError(f"module '{module_name}' defines no @tool functions or Tool objects")
    return [registry.register(t) for t in found]
