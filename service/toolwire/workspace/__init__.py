"""The workspace port: a root folder that file tools and `exec` are confined to."""

from .confinement import (
    InvalidPathError,
    PathTraversalError,
    WalkEntry,
    Workspace,
    WorkspaceError,
)

__all__ = [
    "InvalidPathError",
    "PathTraversalError",
    "WalkEntry",
    "Workspace",
    "WorkspaceError",
]
