"""The address classifier and the policy behind web_fetch and http_fetch's SSRF guard:
literal cases, properties over the whole IPv4 and IPv6 spaces, allow-lists and
`check_url` with a scripted resolver (no network)."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolwire.web import (
    AddressPolicy,
    AddressRefusedError,
    FetchError,
    InvalidUrlError,
    IPAddress,
    Resolver,
    blocked_kind,
    check_url,
)
from toolwire.web.addresses import embedded_ipv4

V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address


def ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("169.254.169.254", "cloud metadata service"),
        ("169.254.0.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "reserved ('this network')"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "cloud metadata service"),
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:a00:1::1", "private"),
        ("::127.0.0.1", "reserved"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private (unique local)"),
        ("fd00:ec2::254", "cloud metadata service"),
        ("fec0::1", "private (site-local)"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("2001::1", "reserved (IETF protocol assignments)"),
        ("100::1", "reserved (discard)"),
        ("4000::1", "reserved"),
        # public
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("93.184.216.34", None),
        ("172.32.0.1", None),
        ("11.0.0.1", None),
        ("::ffff:8.8.8.8", None),
        ("2002:808:808::1", None),
        ("64:ff9b::808:808", None),
        ("2606:4700:4700::1111", None),
        ("2001:4860:4860::8888", None),
        ("2a00:1450:4001::1", None),
    ],
)
def test_addresses_are_classified(address: str, kind: str | None) -> None:
    assert blocked_kind(ip(address)) == kind


def test_a_scope_id_does_not_hide_a_link_local_address() -> None:
    assert blocked_kind(V6("fe80::1%eth0")) == "link-local"


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_and_its_ipv6_forms_get_the_same_verdict(address: V4) -> None:
    mapped = V6(f"::ffff:{address}")
    nat64 = V6(int(V6("64:ff9b::")) | int(address))
    six_to_four = V6((0x2002 << 112) | (int(address) << 80) | 1)
    for form in (mapped, nat64, six_to_four):
        assert embedded_ipv4(form) == address
        assert blocked_kind(form) == blocked_kind(address)


@given(st.ip_addresses())
def test_whatever_python_calls_non_global_is_blocked(address: IPAddress) -> None:
    if embedded_ipv4(address) is not None:
        return  # judged by the IPv4 address inside (covered above)
    if not address.is_global or address.is_multicast or address.is_private:
        assert blocked_kind(address) is not None


@given(
    st.sampled_from(["8.0.0.0/8", "1.0.0.0/8", "93.184.0.0/16", "2606:4700::/32", "2a00::/12"])
    .map(ipaddress.ip_network)
    .flatmap(
        lambda net: st.integers(int(net.network_address), int(net.broadcast_address)).map(
            lambda n: ipaddress.ip_address(n) if net.version == 4 else V6(n)
        )
    )
)
def test_addresses_in_public_ranges_pass(address: IPAddress) -> None:
    assert blocked_kind(address) is None


@given(st.ip_addresses(v=4, network="10.0.0.0/8") | st.ip_addresses(v=6, network="fc00::/7"))
def test_an_allow_listed_network_opens_only_itself(address: IPAddress) -> None:
    policy = AddressPolicy(["10.0.0.0/8", "fc00::/7"])
    assert policy.refusal("internal.example", address) is None
    assert AddressPolicy().refusal("internal.example", address) is not None
    assert policy.refusal("x", ip("192.168.0.1")) == "private"
    assert policy.refusal("x", ip("127.0.0.1")) == "loopback"


def test_allow_list_entries_and_their_mistakes() -> None:
    policy = AddressPolicy(["127.0.0.1", "[::1]", "LocalHost.", "*.corp.example", "10.1.0.0/16"])
    assert policy.refusal("localhost", ip("127.0.0.1")) is None
    assert policy.refusal("localhost", ip("10.9.9.9")) is None  # the name is trusted
    assert policy.refusal("wiki.corp.example", ip("192.168.5.5")) is None
    assert policy.refusal("corp.example", ip("192.168.5.5")) == "private"
    assert policy.refusal("x", ip("::ffff:127.0.0.1")) is None  # mapped form of an allowed IP
    assert policy.refusal("x", ip("::1")) is None
    assert policy.refusal("x", ip("10.1.200.1")) is None
    assert policy.refusal("x", ip("10.2.0.1")) == "private"
    assert AddressPolicy(allow_private=True).refusal("x", ip("169.254.169.254")) is None
    assert AddressPolicy.from_setting("127.0.0.1, localhost 10.0.0.0/8").allow_hosts == (
        "127.0.0.1",
        "localhost",
        "10.0.0.0/8",
    )
    assert AddressPolicy(["127.0.0.1"]) == AddressPolicy(("127.0.0.1",))
    for wrong in ("http://localhost", "localhost:8080", "10.0.0.0/33", "a b", "/x"):
        with pytest.raises(ValueError, match="allow-list entry"):
            AddressPolicy([wrong])
    with pytest.raises(TypeError):
        AddressPolicy("127.0.0.1")
    with pytest.raises(AttributeError):
        policy.allow_private = True  # type: ignore[misc]


def resolver_for(table: dict[str, list[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ip(a) for a in table[host]]

    return resolve


async def test_check_url_resolves_and_checks_every_address() -> None:
    resolve = resolver_for(
        {
            "public.example": ["93.184.216.34", "2606:2800:220:1::1"],
            "mixed.example": ["93.184.216.34", "10.0.0.7"],
            "empty.example": [],
        }
    )
    target = await check_url("https://public.example/a?b=1", AddressPolicy(), resolve)
    assert (target.host, target.port, target.is_ip_literal) == ("public.example", 443, False)
    assert [str(a) for a in target.addresses] == ["93.184.216.34", "2606:2800:220:1::1"]
    with pytest.raises(AddressRefusedError, match=r"resolves to a private address \(10\.0\.0\.7\)"):
        await check_url("http://mixed.example/", AddressPolicy(), resolve)
    with pytest.raises(FetchError, match=r"could not resolve the host 'nowhere\.example'"):
        await check_url("http://nowhere.example/", AddressPolicy(), resolve)
    with pytest.raises(FetchError, match="has no addresses"):
        await check_url("http://empty.example/", AddressPolicy(), resolve)
    literal = await check_url("http://[2606:4700::1111]:8080/", AddressPolicy(), resolve)
    assert (literal.host, literal.port, literal.is_ip_literal) == ("2606:4700::1111", 8080, True)


async def test_a_refused_redirect_names_where_it_came_from() -> None:
    resolve = resolver_for({})
    with pytest.raises(AddressRefusedError) as refused:
        await check_url(
            "http://127.0.0.1/", AddressPolicy(), resolve, redirected_from="https://a.example/"
        )
    assert str(refused.value).startswith(
        "refused: 'https://a.example/' redirects to 'http://127.0.0.1/', which is a loopback "
        "address (127.0.0.1)"
    )
    with pytest.raises(AddressRefusedError, match="which is not an http\\(s\\) URL"):
        await check_url("gopher://x/", AddressPolicy(), resolve, redirected_from="http://a/")
    with pytest.raises(InvalidUrlError, match="only http:// and https:// URLs"):
        await check_url("gopher://x/", AddressPolicy(), resolve)
