"""Exceptions of the registry's management operations.

Dispatch never raises (its failures are `ToolResult`s); registering and
unregistering do, and each error carries what a caller needs to fix the call.
"""

from __future__ import annotations


class ToolwireError(Exception):
    """Base of toolwire's exceptions."""


class InvalidDefinitionError(ToolwireError):
    """A tool definition that cannot be registered as it is."""


class DuplicateToolError(ToolwireError):
    """The name is taken; `suggestion` is a free one."""

    def __init__(self, name: str, suggestion: str) -> None:
        super().__init__(
            f"tool '{name}' already exists; register it under another name, "
            f"for example '{suggestion}'"
        )
        self.name = name
        self.suggestion = suggestion


class ToolNotFoundError(ToolwireError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no tool named '{name}' is registered")
        self.name = name


class NotOwnerError(ToolwireError):
    """A provider tried to change a tool that another provider registered."""


class ProviderNotFoundError(ToolwireError):
    def __init__(self, provider_id: str) -> None:
        super().__init__(
            f"no connected provider has id '{provider_id}'; open a Provide stream first and "
            "use the provider_id it returns"
        )


class NotVisibleError(ToolwireError):
    """A tool exists, but the caller's policy (or run grant) does not let it use it."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"tool '{name}' is not available to this caller: its policy does not allow it"
        )
        self.name = name


class ApprovalsOffError(ToolwireError):
    """The server runs without a policy engine, so there are no tickets."""

    def __init__(self) -> None:
        super().__init__("this server has no policy engine, so no approval tickets exist")
