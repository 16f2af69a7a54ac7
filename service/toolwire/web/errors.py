"""What can go wrong on the web, as exceptions the tools turn into results.

Each kind maps to one error code: a URL the model got wrong is invalid
arguments (`InvalidUrlError` is an `ArgumentError`), an address the policy
refuses is denied by policy, and everything the network or the far side did
is a fetch error (a handler error). Messages are written for the model.
"""

from __future__ import annotations

from toolwire.errors import ToolwireError
from toolwire.validation import ArgumentError


class WebError(ToolwireError):
    """Base of the web package's errors."""


class InvalidUrlError(WebError, ArgumentError):
    """Not an http(s) URL, or not a URL at all."""


class AddressRefusedError(WebError):
    """The address policy refuses the target (or a redirect's target)."""


class FetchError(WebError):
    """The request failed: unresolvable host, refused connection, timeout,
    too many redirects, an error status, …"""


class UnsupportedContentError(FetchError):
    """The response is of a type the fetcher does not read (images, PDFs, …)."""


class SearchError(WebError):
    """A search provider failed (or every provider of a chain did)."""
