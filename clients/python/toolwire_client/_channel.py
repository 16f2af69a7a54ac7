"""How the clients reach the server: a plain or a TLS channel, and where the
bearer token travels.

The sync client, the async client and the provider (which opens its stream on
the async client's channel) all go through `Connection`, so every unary call
and every stream carries the token the same way:

- on a TLS channel this module opens, in call credentials composed into the
  channel credentials (gRPC adds `authorization: Bearer <token>` itself);
- otherwise as call metadata, because gRPC refuses call credentials on an
  insecure channel, and a channel passed in by the caller may be either.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

TOKEN_ENV = "TOOLWIRE_TOKEN"
AUTHORIZATION = "authorization"
SERVER_NAME_OPTION = "grpc.ssl_target_name_override"
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024

Metadata = tuple[tuple[str, str], ...]
_Channel = TypeVar("_Channel")


@dataclass(frozen=True, slots=True)
class Connection:
    """The resolved connection settings of one client. Secrets stay out of its repr."""

    target: str
    metadata: Metadata = field(default=(), repr=False)
    token: str = field(default="", repr=False)
    tls: bool = False
    root_certificates: bytes | None = field(default=None, repr=False)
    client_certificate: tuple[bytes, bytes] | None = field(default=None, repr=False)
    server_name_override: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    @classmethod
    def resolve(
        cls,
        target: str,
        *,
        channel: object | None,
        metadata: Sequence[tuple[str, str]],
        token: str | None,
        tls: bool,
        root_certificates: bytes | None,
        client_certificate: tuple[bytes, bytes] | None,
        server_name_override: str | None,
        max_message_bytes: int,
    ) -> Connection:
        """Settings from a client's arguments.

        `token=None` falls back to `TOOLWIRE_TOKEN`, unless `metadata` already
        authorizes the calls (a caller who does that has chosen). Certificates
        and a server name only make sense over TLS, so they imply it; with a
        channel passed in they cannot apply at all.
        """
        metadata = tuple(metadata)
        has_authorization = any(key.lower() == AUTHORIZATION for key, _ in metadata)
        if token and has_authorization:
            raise ValueError("pass the token either as `token` or in `metadata`, not both")
        if token is None:
            token = "" if has_authorization else os.environ.get(TOKEN_ENV, "")
        tls = tls or any(
            setting is not None
            for setting in (root_certificates, client_certificate, server_name_override)
        )
        if channel is not None and tls:
            raise ValueError("TLS settings apply to the client's own channel, not to one passed in")
        return cls(
            target=target,
            metadata=metadata,
            token=token,
            tls=tls,
            root_certificates=root_certificates,
            client_certificate=client_certificate,
            server_name_override=server_name_override,
            max_message_bytes=max_message_bytes,
        )

    def sync_channel(self) -> grpc.Channel:
        return self._open(grpc.secure_channel, grpc.insecure_channel)

    def aio_channel(self) -> grpc.aio.Channel:
        return self._open(grpc.aio.secure_channel, grpc.aio.insecure_channel)

    def call_metadata(self, *, own_channel: bool) -> Metadata:
        """What every call sends as metadata: the caller's, plus the token unless
        the channel's credentials carry it already."""
        if not self.token or (own_channel and self.tls):
            return self.metadata
        return (*self.metadata, (AUTHORIZATION, f"Bearer {self.token}"))

    def _open(
        self,
        secure: Callable[[str, grpc.ChannelCredentials, list[tuple[str, Any]]], _Channel],
        insecure: Callable[[str, list[tuple[str, Any]]], _Channel],
    ) -> _Channel:
        options: list[tuple[str, Any]] = [
            ("grpc.max_send_message_length", self.max_message_bytes),
            ("grpc.max_receive_message_length", self.max_message_bytes),
        ]
        if not self.tls:
            return insecure(self.target, options)
        if self.server_name_override:
            options.append((SERVER_NAME_OPTION, self.server_name_override))
        key, chain = (None, None)
        if self.client_certificate is not None:
            chain, key = self.client_certificate
        credentials = grpc.ssl_channel_credentials(
            root_certificates=self.root_certificates, private_key=key, certificate_chain=chain
        )
        if self.token:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.access_token_call_credentials(self.token)
            )
        return secure(self.target, credentials, options)
