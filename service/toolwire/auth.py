"""Who is calling: bearer tokens mapped to principals with scopes.

Both listeners authenticate through one `Authenticator`. Static tokens come
from the configuration (or the environment) and are kept only as SHA-256
digests, compared in constant time against every entry, so neither the table
nor the time a lookup takes gives a token away. A code run's token is a
principal of the same system: it acts for whoever started the run, under that
principal's policy, narrowed further by the run's grant.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from .errors import ToolwireError

if TYPE_CHECKING:
    from .capabilities import Capabilities, RunGrant


class Scope(StrEnum):
    DISPATCH = "dispatch"
    """Call tools (Dispatch, DispatchBatch)."""
    REGISTER = "register"
    """Serve tools (Provide, Register, and Unregister of one's own tools)."""
    ADMIN = "admin"
    """Approve or deny tickets, unregister anyone's tools; implies the others."""


ALL_SCOPES = frozenset(Scope)


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    scopes: frozenset[Scope]
    policy: str = ""
    """The policy that applies; empty: the one named after the principal, else the default."""
    run: RunGrant | None = None
    """Set for a code run: it acts for `name` and only within this grant."""

    def allows(self, scope: Scope) -> bool:
        return Scope.ADMIN in self.scopes or scope in self.scopes

    @property
    def key(self) -> str:
        """What limits and audit count it under: a run apart from its starter,
        so that a run's nested calls do not compete with the call that started it."""
        return self.name if self.run is None else f"{self.name}/run-{self.run.run_id}"


LOCAL = Principal("local", ALL_SCOPES)
"""The caller of an unauthenticated development server (loopback only)."""


class AuthenticationError(ToolwireError):
    """No credentials, or credentials that name nobody (UNAUTHENTICATED)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ScopeError(ToolwireError):
    """A known principal asked for something its scopes do not cover."""

    def __init__(self, principal: Principal, scope: Scope, action: str) -> None:
        super().__init__(
            f"principal '{principal.name}' may not {action}: that needs the '{scope}' scope, "
            f"and its token has {', '.join(sorted(principal.scopes)) or 'none'}"
        )
        self.principal = principal.name
        self.scope = scope


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True, slots=True)
class TokenEntry:
    principal: str
    token_sha256: bytes
    scopes: frozenset[Scope]
    policy: str = ""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `authorization: Bearer <token>` header; None if absent.

    Raises AuthenticationError for a header that is present but malformed."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError(
            "TOKEN_MALFORMED", "the authorization header must be 'Bearer <token>'"
        )
    return token.strip()


class Authenticator:
    """Resolves a listener's `authorization` header to a principal.

    `anonymous` is who an absent header stands for: the local development
    principal on a loopback-only server without tokens, otherwise None (the
    call is refused). The sandbox's listener never has an anonymous principal,
    so code cannot drop its run token to escape its grant.
    """

    def __init__(
        self,
        tokens: tuple[TokenEntry, ...] = (),
        *,
        capabilities: Capabilities | None = None,
        anonymous: Principal | None = None,
    ) -> None:
        self._tokens = tokens
        self._capabilities = capabilities
        self.anonymous = anonymous

    @property
    def has_tokens(self) -> bool:
        return bool(self._tokens)

    def without_anonymous(self) -> Authenticator:
        return Authenticator(self._tokens, capabilities=self._capabilities)

    def authenticate(self, authorization: str | None) -> Principal:
        token = bearer_token(authorization)
        if token is None:
            if self.anonymous is not None:
                return self.anonymous
            raise AuthenticationError(
                "TOKEN_MISSING", "send a token as 'authorization: Bearer <token>'"
            )
        wanted = digest(token)
        found: TokenEntry | None = None
        for entry in self._tokens:  # every entry, always: no early exit to time
            if hmac.compare_digest(entry.token_sha256, wanted):
                found = entry
        if found is not None:
            return Principal(found.principal, found.scopes, found.policy)
        grant = None if self._capabilities is None else self._capabilities.lookup(token)
        if grant is not None:
            return grant.as_principal()
        raise AuthenticationError("TOKEN_INVALID", "the token is unknown, revoked or expired")

    def authorize(self, authorization: str | None, scope: Scope | None, action: str) -> Principal:
        """The caller, if its token covers `scope` (None: any authenticated caller)."""
        principal = self.authenticate(authorization)
        if scope is not None and not principal.allows(scope):
            raise ScopeError(principal, scope, action)
        return principal
