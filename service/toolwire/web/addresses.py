"""Which addresses a tool may reach: the guard against SSRF.

A model that can fetch URLs can be talked into fetching `http://127.0.0.1:…`,
`http://10.0.0.5/admin` or the cloud metadata service at `169.254.169.254`.
So every request (and every redirect hop) goes through `check_url`: only http
and https, the host resolved, and every address it resolves to must be public
unless the policy's allow-list says otherwise.

The classifier is an explicit table of the IANA special-purpose ranges, not
`ipaddress`'s `is_private`/`is_global` alone (whose answers have changed
between Python releases, and which call multicast and several IPv6 ranges
global); `is_global` is consulted as a second opinion. IPv6 forms that carry
an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
`2002::/16`) are judged by the IPv4 address inside.

DNS rebinding: `check_url` returns the addresses it checked, and the client
(`GuardedClient`) connects to exactly those, never resolving the name again,
so a name that answers a public address to the check and a private one to the
connection gets nowhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import httpx

from .errors import AddressRefusedError, FetchError, InvalidUrlError

__all__ = [
    "AddressPolicy",
    "IPAddress",
    "Resolver",
    "Target",
    "blocked_kind",
    "check_url",
    "embedded_ipv4",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""`await resolve(host, port)`: the host's addresses, in the order to try them;
raises OSError when the name does not resolve."""

SCHEMES = ("http", "https")
DEFAULT_HINT = "AddressPolicy(allow_hosts=[...])"

# Ordered: the first range that contains the address names its kind.
_V4_TABLE: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/32", "unspecified"),
    ("0.0.0.0/8", "reserved ('this network')"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.169.254/32", "cloud metadata service"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved (6to4 relay)"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_TABLE: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/8", "reserved"),  # after ::ffff:0:0/96 is unwrapped, see blocked_kind
    ("64:ff9b:1::/48", "private (local-use NAT64)"),
    ("100::/64", "reserved (discard)"),
    ("2001:db8::/32", "documentation"),
    ("2001::/23", "reserved (IETF protocol assignments)"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "reserved (SRv6)"),
    ("fd00:ec2::254/128", "cloud metadata service"),
    ("fc00::/7", "private (unique local)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "private (site-local)"),
    ("ff00::/8", "multicast"),
)
_V4_RANGES = tuple((ipaddress.IPv4Network(n), kind) for n, kind in _V4_TABLE)
_V6_RANGES = tuple((ipaddress.IPv6Network(n), kind) for n, kind in _V6_TABLE)
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, where the network would
    deliver it there: IPv4-mapped, NAT64 (well-known prefix) and 6to4."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _SIX_TO_FOUR:
        return ip.sixtofour
    return None


def blocked_kind(ip: IPAddress) -> str | None:
    """What kind of non-public address `ip` is (`"loopback"`, `"private"`, …),
    or None for a public unicast address."""
    inner = embedded_ipv4(ip)
    if inner is not None:
        return blocked_kind(inner)
    if isinstance(ip, ipaddress.IPv4Address):
        for v4_network, kind in _V4_RANGES:
            if ip in v4_network:
                return kind
    else:
        ip = ipaddress.IPv6Address(int(ip))  # without a scope id
        for v6_network, kind in _V6_RANGES:
            if ip in v6_network:
                return kind
        if ip not in _GLOBAL_UNICAST:
            return "reserved"
    if ip.is_multicast:
        return "multicast"
    if not ip.is_global or ip.is_reserved:
        return "reserved"
    return None


def _article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


_HOSTNAME = re.compile(
    r"^(?=.{1,253}\.?$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
    r"(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$"
)


def _normalize_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


class AddressPolicy:
    """Which non-public addresses are reachable anyway.

    `allow_hosts` entries are hostnames (`"localhost"`; `"*.corp.example"`
    for every name under a domain), IP addresses (`"127.0.0.1"`, `"::1"`) or
    CIDR networks (`"10.0.0.0/8"`). A request to an allow-listed hostname may
    reach whatever that name resolves to; otherwise every address the host
    resolves to must be public or inside an allow-listed address or network.
    `allow_private=True` turns the address check off (local development only:
    it also opens the cloud metadata service). `hint` is how the refusal
    message tells an operator to allow an address (the server names its
    setting there). Immutable.
    """

    __slots__ = ("_allow_hosts", "_allow_private", "_hint", "_names", "_networks", "_suffixes")

    _allow_hosts: tuple[str, ...]
    _allow_private: bool
    _hint: str
    _names: frozenset[str]
    _suffixes: tuple[str, ...]
    _networks: tuple[IPNetwork, ...]

    def __init__(
        self,
        allow_hosts: Iterable[str] = (),
        allow_private: bool = False,
        hint: str = DEFAULT_HINT,
    ) -> None:
        if isinstance(allow_hosts, str):
            raise TypeError("allow_hosts is a list of entries; use AddressPolicy.from_setting")
        entries = tuple(e.strip() for e in allow_hosts if e.strip())
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for entry in entries:
            ip = _parse_ip(entry.strip("[]"))
            if ip is not None:
                networks.append(ipaddress.ip_network(ip))
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError as e:
                    raise ValueError(
                        f"allow-list entry {entry!r} is not a valid network: {e}"
                    ) from e
                continue
            name = _normalize_host(entry)
            wildcard = name.startswith("*.")
            if wildcard:
                name = name[2:]
            if not _HOSTNAME.match(name):
                raise ValueError(
                    f"allow-list entry {entry!r} is not a hostname, an IP address or a CIDR "
                    "network (no schemes, ports or paths)"
                )
            if wildcard:
                suffixes.append("." + name)
            else:
                names.add(name)
        set_ = object.__setattr__
        set_(self, "_allow_hosts", entries)
        set_(self, "_allow_private", allow_private)
        set_(self, "_hint", hint)
        set_(self, "_names", frozenset(names))
        set_(self, "_suffixes", tuple(suffixes))
        set_(self, "_networks", tuple(networks))

    @property
    def allow_hosts(self) -> tuple[str, ...]:
        return self._allow_hosts

    @property
    def allow_private(self) -> bool:
        return self._allow_private

    @property
    def hint(self) -> str:
        return self._hint

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("AddressPolicy is immutable")

    def __repr__(self) -> str:
        return (
            f"AddressPolicy(allow_hosts={list(self.allow_hosts)!r}, "
            f"allow_private={self.allow_private!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AddressPolicy):
            return NotImplemented
        return (self.allow_hosts, self.allow_private, self.hint) == (
            other.allow_hosts,
            other.allow_private,
            other.hint,
        )

    def __hash__(self) -> int:
        return hash((self.allow_hosts, self.allow_private, self.hint))

    @classmethod
    def from_setting(
        cls, value: str, *, allow_private: bool = False, hint: str = DEFAULT_HINT
    ) -> AddressPolicy:
        """From a comma- or space-separated setting: `"localhost, 10.0.0.0/8"`."""
        return cls(re.split(r"[\s,]+", value), allow_private=allow_private, hint=hint)

    def host_allowed(self, host: str) -> bool:
        """The hostname itself is on the allow-list."""
        name = _normalize_host(host)
        return name in self._names or any(name.endswith(s) for s in self._suffixes)

    def refusal(self, host: str, ip: IPAddress) -> str | None:
        """Why `ip` (an address of `host`) is refused — its kind — or None."""
        if self.allow_private or self.host_allowed(host):
            return None
        candidates = [ip] if (inner := embedded_ipv4(ip)) is None else [ip, inner]
        for network in self._networks:
            if any(c.version == network.version and c in network for c in candidates):
                return None
        return blocked_kind(ip)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The addresses `getaddrinfo` gives, in its order, without duplicates."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    found: dict[IPAddress, None] = {}
    for family, _, _, _, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            ip = _parse_ip(str(sockaddr[0]))
            if ip is not None:
                found[ip] = None
    return list(found)


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL and the addresses to connect to (and only those)."""

    url: httpx.URL
    host: str
    """The host as sent on the wire (IDNA-encoded; no brackets for IPv6)."""
    port: int
    addresses: tuple[IPAddress, ...]
    is_ip_literal: bool


class _BadUrl(Exception):
    def __init__(self, problem: str, advice: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.advice = advice


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as e:
        raise _BadUrl(f"is not a valid URL: {e}") from e
    if parsed.scheme not in SCHEMES:
        shown = f"'{parsed.scheme}:'" if parsed.scheme else "none"
        raise _BadUrl(
            f"is not an http(s) URL (scheme {shown})",
            "only http:// and https:// URLs can be fetched",
        )
    host = parsed.raw_host.decode("ascii", errors="replace")
    if not host:
        raise _BadUrl("has no host", "write a full URL like https://example.com/")
    if _parse_ip(host) is None and not _HOSTNAME.match(host.lower()):
        raise _BadUrl(f"has an invalid host name '{parsed.host}'")
    return parsed


def parse_url(url: str) -> httpx.URL:
    """An absolute http(s) URL with a plausible host. Raises InvalidUrlError."""
    try:
        return _parse(url)
    except _BadUrl as e:
        advice = f"; {e.advice}" if e.advice else ""
        raise InvalidUrlError(f"'{url}' {e.problem}{advice}") from None


def _show(ip: IPAddress) -> str:
    inner = embedded_ipv4(ip)
    if inner is None:
        return str(ip)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return f"::ffff:{inner}, which is {inner}"
    return f"{ip}, which is {inner}"


async def check_url(
    url: str | httpx.URL,
    policy: AddressPolicy,
    resolver: Resolver = system_resolver,
    *,
    redirected_from: str | None = None,
) -> Target:
    """Checks a URL against the policy and returns the addresses to use.

    Raises InvalidUrlError for a URL the caller wrote wrongly (for a redirect:
    AddressRefusedError, since the server chose it), AddressRefusedError for a
    refused address, FetchError when the host does not resolve.
    """
    text = str(url)
    if redirected_from is None:
        parsed = url if isinstance(url, httpx.URL) else parse_url(url)
    else:
        try:
            parsed = _parse(text)
        except _BadUrl as e:
            raise AddressRefusedError(
                f"refused: '{redirected_from}' redirects to '{text}', which {e.problem}"
            ) from None
    host = parsed.raw_host.decode("ascii")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    literal = _parse_ip(host)
    if literal is not None:
        addresses: Sequence[IPAddress] = [literal]
    else:
        try:
            addresses = await resolver(host, port)
        except OSError as e:
            reason = e.strerror or str(e) or type(e).__name__
            raise FetchError(
                f"could not resolve the host '{parsed.host}' of '{text}': {reason}"
            ) from None
        if not addresses:
            raise FetchError(f"the host '{parsed.host}' of '{text}' has no addresses")
    for ip in addresses:
        kind = policy.refusal(host, ip)
        if kind is None:
            continue
        shown = _show(ip)
        verb = f"is {_article(kind)}" if literal is not None else f"resolves to {_article(kind)}"
        where = f"'{text}'"
        if redirected_from is not None:
            where = f"'{redirected_from}' redirects to '{text}', which"
        raise AddressRefusedError(
            f"refused: {where} {verb} address ({shown}); private, loopback, link-local and "
            f"other non-public addresses are blocked (allow them with {policy.hint})"
        )
    return Target(
        url=parsed,
        host=host,
        port=port,
        addresses=tuple(addresses),
        is_ip_literal=literal is not None,
    )
