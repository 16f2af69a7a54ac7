"""Pages of a name-sorted tool list, with opaque tokens.

A token names the last tool of the page, so paging stays well defined while
tools come and go: the next page starts after that name.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

from .models import ToolDefinition

MAX_PAGE_SIZE = 1000


class PageTokenError(ValueError):
    """A page size or token the caller must fix."""


def _encode(after: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode()


def _decode(token: str) -> str:
    try:
        after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
    except (binascii.Error, ValueError, KeyError, TypeError) as e:
        raise PageTokenError(
            "page_token is not one this registry issued; pass next_page_token as it came"
        ) from e
    if not isinstance(after, str):
        raise PageTokenError("page_token is not one this registry issued")
    return after


def paginate(
    tools: Sequence[ToolDefinition], page_size: int, token: str
) -> tuple[list[ToolDefinition], str]:
    """The page after `token` of name-sorted `tools`, and the next page's token."""
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise PageTokenError(f"page_size must be between 0 and {MAX_PAGE_SIZE}, got {page_size}")
    rest = list(tools)
    if token:
        after = _decode(token)
        rest = [t for t in rest if t.name > after]
    if page_size == 0 or len(rest) <= page_size:
        return rest, ""
    page = rest[:page_size]
    return page, _encode(page[-1].name)
