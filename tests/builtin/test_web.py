"""web_fetch and web_search through the registry, against real HTTP servers on
loopback that the tests start (this machine has no internet): pages, paging,
redirects, size caps, slow answers, binary content, encodings, the address
policy, the search chain, and the SearXNG and Brave providers against fakes
that speak their JSON."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from toolwire.builtin.web import NO_SEARCH_PROVIDER, web_tools
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.web import (
    AddressPolicy,
    BraveSearch,
    FetchedPage,
    FetchFn,
    HttpFetcher,
    IPAddress,
    SearchChain,
    SearchError,
    SearchFn,
    SearchHit,
    SearxngSearch,
    build_search_chain,
)

Site = Any  # the `site` and `make_site` fixtures of conftest.py
Route = Callable[[Any], None]


LOCAL = AddressPolicy(["127.0.0.1"])

ARTICLE = """<!doctype html>
<html><head><title>The  Article</title>
<style>body { color: red }</style><script>alert("tracking")</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Main heading</h1>
<p>Some <b>bold</b> words, a <a href="/docs/next.html">relative link</a> and snake_case_names.</p>
<div style="display: none">invisible text</div>
<ul><li>first item</li><li>second item</li></ul>
<pre><code>print("hello")</code></pre>
<footer>Copyright footer</footer>
</body></html>"""


def fetcher(policy: AddressPolicy = LOCAL, **options: Any) -> HttpFetcher:
    limits: dict[str, Any] = {"timeout": 3.0, "connect_timeout": 1.0, "read_timeout": 2.0}
    return HttpFetcher(policy, **{**limits, **options})


def registry(
    fetch: FetchFn | None = None, search: SearchFn | None = None, **options: Any
) -> ToolRegistry:
    tools = ToolRegistry(default_timeout=10)
    for t in web_tools(search, fetch or fetcher(), **options):
        tools.register(t)
    return tools


async def fetch(tools: ToolRegistry, url: str, continue_from: int | None = None) -> ToolResult:
    arguments: dict[str, Any] = {"url": url}
    if continue_from is not None:
        arguments["continue_from"] = continue_from
    return await tools.dispatch("web_fetch", arguments)


def html(body: str) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.reply(200, body.encode())

    return route


def redirect(location: str, status: int = 302) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.reply(status, b"", None, {"Location": location})

    return route


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- definitions ------------------------------------------------------------------


def test_the_tools_are_defined_with_tiers_and_groups() -> None:
    tools = registry()
    search, fetch_ = tools.get("web_search"), tools.get("web_fetch")
    assert search is not None and fetch_ is not None
    assert (search.safety_tier, search.group) == (SafetyTier.READ_ONLY, "web")
    assert (fetch_.safety_tier, fetch_.group) == (SafetyTier.SIDE_EFFECTING, "web")
    assert fetch_.input_schema is not None
    assert fetch_.input_schema["required"] == ["url"]
    assert fetch_.input_schema["properties"]["continue_from"]["minimum"] == 0
    assert "continue_from" in fetch_.description


# --- pages ----------------------------------------------------------------------------


async def test_an_html_page_becomes_markdown(site: Site) -> None:
    site.routes["/article"] = html(ARTICLE)
    result = await fetch(registry(), site.url("/article"))
    assert result.success, result.error
    text = result.output
    assert text.startswith("# The Article\nURL: " + site.url("/article"))
    assert "# Main heading" in text
    assert "**bold**" in text
    assert f"[relative link]({site.url('/docs/next.html')})" in text
    assert "snake_case_names" in text  # not escaped into snake\_case
    assert "- first item\n- second item" in text
    assert '```\nprint("hello")\n```' in text
    for noise in ("alert", "color: red", "Home", "invisible text", "Copyright footer"):
        assert noise not in text
    assert "continue_from" not in text  # one page only
    assert result.structured_output == {
        "url": site.url("/article"),
        "final_url": site.url("/article"),
        "status": 200,
        "content_type": "text/html",
        "title": "The Article",
        "offset": 0,
        "next_offset": None,
        "total_chars": result.structured_output["total_chars"],
        "page": 1,
        "pages": 1,
        "download_truncated": False,
    }
    assert site.seen[0].headers["user-agent"].startswith("toolwire/")


async def test_text_and_json_are_read_as_they_are(site: Site) -> None:
    site.routes["/notes.txt"] = lambda h: h.reply(200, b"line one\r\nline two\n", "text/plain")
    site.routes["/data.json"] = lambda h: h.reply(200, b'{"answer": 42}', "application/json")
    site.routes["/readme.md"] = lambda h: h.reply(200, b"# Title\n\n*hi*", "text/markdown")
    tools = registry()
    notes = await fetch(tools, site.url("/notes.txt"))
    assert notes.output.endswith("\n\nline one\nline two\n")
    data = await fetch(tools, site.url("/data.json"))
    assert data.output.endswith('{"answer": 42}')
    assert data.structured_output["content_type"] == "application/json"
    readme = await fetch(tools, site.url("/readme.md"))
    assert readme.output.endswith("# Title\n\n*hi*")


async def test_a_page_without_content_type_is_sniffed(site: Site) -> None:
    site.routes["/untyped.html"] = lambda h: h.reply(200, b"<html><h1>Hi</h1></html>", None)
    site.routes["/untyped.bin"] = lambda h: h.reply(200, b"\x89PNG\r\n\x1a\n\x00\x00", None)
    tools = registry()
    page = await fetch(tools, site.url("/untyped.html"))
    assert page.success and "# Hi" in page.output
    binary = await fetch(tools, site.url("/untyped.bin"))
    assert binary.error_code is ErrorCode.HANDLER_ERROR
    assert "no content type and its body looks binary" in binary.error


async def test_an_error_status_fails_with_the_status_and_an_excerpt(site: Site) -> None:
    result = await fetch(registry(), site.url("/missing"))
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == f"'{site.url('/missing')}' answered HTTP 404: no such page"


# --- paging -----------------------------------------------------------------------------


async def test_long_pages_come_in_pages_with_a_cursor(site: Site) -> None:
    paragraphs = [f"Paragraph {i}: " + "word " * 40 for i in range(30)]
    document = "\n\n".join(p.strip() for p in paragraphs)
    site.routes["/long.txt"] = lambda h: h.reply(200, document.encode(), "text/plain")
    tools = registry(page_chars=1000)
    url = site.url("/long.txt")

    first = await fetch(tools, url)
    assert first.success
    cursor = first.structured_output["next_offset"]
    pages = first.structured_output["pages"]
    assert 0 < cursor <= 1000
    assert pages == first.structured_output["total_chars"] // 1000 + 1 or pages > 1
    assert f"Page 1 of {pages}: characters 0–{cursor:,} of {len(document):,}" in first.output
    assert first.output.endswith(
        f"… [page 1 of {pages} — call web_fetch again with continue_from={cursor} to read on]"
    )
    assert document[:cursor].endswith("\n\n")  # pages end at a paragraph break

    texts = [document[:cursor]]
    number = 1
    while cursor is not None:
        result = await fetch(tools, url, continue_from=cursor)
        assert result.success, result.error
        data = result.structured_output
        number += 1
        assert (data["page"], data["pages"], data["offset"]) == (number, pages, cursor)
        texts.append(document[cursor : data["next_offset"] or len(document)])
        assert texts[-1] in result.output
        cursor = data["next_offset"]
    assert result.output.endswith(f"[page {pages} of {pages} — the end]")
    assert "".join(texts) == document
    assert number == pages
    assert len([s for s in site.seen if s.path == "/long.txt"]) == 1  # paging used the cache


async def test_continue_from_beyond_the_end_is_an_invalid_argument(site: Site) -> None:
    site.routes["/short.txt"] = lambda h: h.reply(200, b"x" * 120, "text/plain")
    tools = registry(page_chars=50)
    url = site.url("/short.txt")
    assert (await fetch(tools, url)).success
    beyond = await fetch(tools, url, continue_from=120)
    assert beyond.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "continue_from=120 is beyond the end" in beyond.error
    assert "(120 characters); pass an offset below 120" in beyond.error
    negative = await fetch(tools, url, continue_from=-1)
    assert negative.error_code is ErrorCode.INVALID_ARGUMENTS
    inside = await fetch(tools, url, continue_from=100)
    assert inside.success
    assert inside.structured_output["offset"] == 100
    assert inside.structured_output["next_offset"] is None


async def test_pages_fit_the_byte_budget_in_any_script(site: Site) -> None:
    document = "漢字かな交じり文。" * 2000  # 3 bytes a character
    site.routes["/ja.txt"] = lambda h: h.reply(200, document.encode(), "text/plain; charset=utf-8")
    tools = registry(page_chars=8000, page_bytes=12_000)
    result = await fetch(tools, site.url("/ja.txt"))
    assert result.success and not result.truncated
    end = result.structured_output["next_offset"]
    assert 3900 < end <= 4000  # 12,000 bytes
    assert len(result.output.encode()) < tools.max_output_bytes


async def test_the_cache_expires_and_a_fresh_call_fetches_again(site: Site) -> None:
    site.routes["/doc.txt"] = lambda h: h.reply(200, b"a" * 300, "text/plain")
    now = [0.0]
    tools = registry(page_chars=100, cache_ttl=60, clock=lambda: now[0])
    url = site.url("/doc.txt")

    def hits() -> int:
        return len([s for s in site.seen if s.path == "/doc.txt"])

    await fetch(tools, url)
    await fetch(tools, url, continue_from=100)
    assert hits() == 1
    now[0] = 61.0
    again = await fetch(tools, url, continue_from=200)
    assert again.success
    assert hits() == 2  # expired: fetched again
    await fetch(tools, url)
    assert hits() == 3  # no continue_from: always fresh


# --- redirects --------------------------------------------------------------------------------


async def test_redirects_are_followed_and_reported(site: Site) -> None:
    site.routes["/old"] = redirect("/older", 301)
    site.routes["/older"] = redirect(site.url("/new"), 307)
    site.routes["/new"] = html("<title>New</title><p>moved here</p>")
    result = await fetch(registry(), site.url("/old"))
    assert result.success, result.error
    assert f"URL: {site.url('/new')} (redirected from {site.url('/old')})" in result.output
    assert result.structured_output["final_url"] == site.url("/new")


async def test_five_redirects_are_fine_and_a_sixth_is_too_many(site: Site) -> None:
    for i in range(6):
        site.routes[f"/hop{i}"] = redirect(f"/hop{i + 1}")
    site.routes["/hop6"] = html("<p>arrived</p>")
    tools = registry()
    assert (await fetch(tools, site.url("/hop1"))).success  # five hops
    result = await fetch(tools, site.url("/hop0"))  # six hops
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error.startswith("too many redirects: stopped after 5 (")
    assert "which redirects again to '/hop6'" in result.error
    assert not any(s.path == "/hop6" for s in site.seen[-6:])


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata service address"),
        ("http://10.0.0.1/admin", "private address (10.0.0.1)"),
        ("http://[::1]:{port}/secret", "loopback address (::1)"),
        ("http://0.0.0.0:{port}/secret", "unspecified address (0.0.0.0)"),
        ("file:///etc/passwd", "which is not an http(s) URL"),
    ],
)
async def test_a_redirect_to_a_blocked_address_is_refused(
    site: Site, location: str, shown: str
) -> None:
    site.routes["/jump"] = redirect(location.format(port=site.port))
    site.routes["/secret"] = html("<p>internal only</p>")
    result = await fetch(registry(), site.url("/jump"))
    assert result.error_code is ErrorCode.DENIED_BY_POLICY
    assert result.error.startswith(f"refused: '{site.url('/jump')}' redirects to")
    assert shown in result.error
    assert [s.path for s in site.seen] == ["/jump"]


# --- limits -----------------------------------------------------------------------------------


async def test_a_huge_body_is_cut_at_the_cap_and_says_so(site: Site) -> None:
    def huge(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        for _ in range(256):  # 16 MiB, unless the client hangs up first
            h.wfile.write(b"0123456789abcdef" * 4096)

    site.routes["/huge"] = huge
    tools = registry(fetcher(max_bytes=64 * 1024))
    started = time.monotonic()
    result = await fetch(tools, site.url("/huge"))
    assert time.monotonic() - started < 3
    assert result.success, result.error
    assert result.structured_output["download_truncated"] is True
    total = result.structured_output["total_chars"]
    assert 65_536 < total < 66_000
    last = await fetch(tools, site.url("/huge"), continue_from=total - 200)
    assert last.output.endswith(
        "[download stopped at 65,536 bytes: the page is larger and the rest was not read]"
        "\n\n[page 10 of 10 — the end]"
    )


async def test_a_slow_answer_times_out(site: Site) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        site.release.wait(10)
        h.reply(200, b"late")

    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        while not site.release.wait(0.05):
            h.wfile.write(b"x")
            h.wfile.flush()

    site.routes["/slow"] = slow
    site.routes["/trickle"] = trickle
    tools = registry(fetcher(timeout=0.8, read_timeout=0.2))
    started = time.monotonic()
    waited = await fetch(tools, site.url("/slow"))
    assert waited.error_code is ErrorCode.HANDLER_ERROR
    assert waited.error == f"timed out after 0.2 s waiting for '{site.url('/slow')}' to answer"
    trickled = await fetch(tools, site.url("/trickle"))
    assert trickled.error_code is ErrorCode.HANDLER_ERROR
    assert trickled.error == f"timed out after 0.8 s fetching '{site.url('/trickle')}'"
    assert time.monotonic() - started < 2.5


async def test_a_refused_connection_says_so() -> None:
    port = free_port()
    result = await fetch(registry(), f"http://127.0.0.1:{port}/")
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == (
        f"could not connect to 'http://127.0.0.1:{port}/' (127.0.0.1 port {port}): "
        "connection refused"
    )


@pytest.mark.parametrize(
    "content_type", ["image/png", "application/pdf", "application/octet-stream", "video/mp4"]
)
async def test_binary_content_is_refused_by_its_type(site: Site, content_type: str) -> None:
    site.routes["/file"] = lambda h: h.reply(200, b"\x00\x01binary" * 100, content_type)
    result = await fetch(registry(), site.url("/file"))
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == (
        f"'{site.url('/file')}' is {content_type}, 800 bytes: only HTML and text (plain text, "
        "Markdown, JSON, XML) can be read, not images, PDFs or other binary files"
    )


# --- encodings -------------------------------------------------------------------------------


async def test_encodings_from_headers_meta_and_bad_bytes(site: Site) -> None:
    latin = "<p>Caf\u00e9 cr\u00e8me, na\u00efve</p>".encode("latin-1")
    site.routes["/latin-header"] = lambda h: h.reply(200, latin, "text/html; charset=ISO-8859-1")
    site.routes["/latin-meta"] = lambda h: h.reply(
        200, b'<meta charset="windows-1252">' + latin + b"<p>\x93quoted\x94</p>", "text/html"
    )
    site.routes["/bad-utf8"] = lambda h: h.reply(
        200, b"valid \xe2\x9c\x93 then bad \xff\xfe\xc3( end", "text/plain"
    )
    site.routes["/unknown-charset"] = lambda h: h.reply(
        200, "\u00fcber".encode(), "text/plain; charset=x-no-such-charset"
    )
    tools = registry()
    for path in ("/latin-header", "/latin-meta"):
        result = await fetch(tools, site.url(path))
        assert "Caf\u00e9 cr\u00e8me, na\u00efve" in result.output, path
    assert "\u201cquoted\u201d" in (await fetch(tools, site.url("/latin-meta"))).output
    bad = await fetch(tools, site.url("/bad-utf8"))
    assert bad.success
    assert bad.output.endswith("valid \u2713 then bad \ufffd\ufffd\ufffd( end")
    unknown = await fetch(tools, site.url("/unknown-charset"))
    assert unknown.output.endswith("\u00fcber")


# --- bad URLs and the address policy -----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "is not an http(s) URL (scheme 'file:')"),
        ("ftp://example.com/file.txt", "is not an http(s) URL (scheme 'ftp:')"),
        ("javascript:alert(1)", "is not an http(s) URL (scheme 'javascript:')"),
        ("example.com/page", "is not an http(s) URL (scheme none)"),
        ("http:///nohost", "has no host"),
        ("http://exa mple.com/", "has an invalid host name"),
        ("http://[::1/", "is not a valid URL"),
    ],
)
async def test_urls_that_are_not_http_are_invalid_arguments(url: str, message: str) -> None:
    result = await fetch(registry(fetcher(AddressPolicy())), url)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert message in result.error
    assert result.error.startswith("invalid arguments for 'web_fetch': ")


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127.0.0.1", "is a loopback address (127.0.0.1)"),
        ("127.1.2.3", "is a loopback address (127.1.2.3)"),
        ("[::1]", "is a loopback address (::1)"),
        ("[::ffff:127.0.0.1]", "is a loopback address (::ffff:127.0.0.1, which is 127.0.0.1)"),
        ("0.0.0.0", "is an unspecified address (0.0.0.0)"),
        ("10.1.2.3", "is a private address (10.1.2.3)"),
        ("192.168.0.10", "is a private address (192.168.0.10)"),
        ("172.16.5.4", "is a private address (172.16.5.4)"),
        ("169.254.169.254", "is a cloud metadata service address (169.254.169.254)"),
        ("169.254.10.1", "is a link-local address (169.254.10.1)"),
        ("[fe80::1]", "is a link-local address (fe80::1)"),
        ("[fd12:3456::1]", "is a private (unique local) address (fd12:3456::1)"),
        ("localhost", "resolves to a loopback address"),
        ("2130706433", "resolves to a loopback address (127.0.0.1)"),
    ],
)
async def test_private_and_local_addresses_are_refused_by_default(
    site: Site, host: str, kind: str
) -> None:
    site.routes["/"] = html("<p>internal</p>")
    url = f"http://{host}:{site.port}/"
    result = await fetch(registry(fetcher(AddressPolicy())), url)
    assert result.error_code is ErrorCode.DENIED_BY_POLICY
    assert result.error.startswith(f"refused: '{url}' {kind}")
    assert result.error.endswith(
        "; private, loopback, link-local and other non-public addresses are blocked "
        "(allow them with AddressPolicy(allow_hosts=[...]))"
    )
    assert site.seen == []


async def test_the_allow_list_lets_local_addresses_through(site: Site) -> None:
    site.routes["/"] = html("<p>local service</p>")
    bare = await fetch(registry(), f"http://127.0.0.1:{site.port}")
    assert bare.output.splitlines()[0] == f"URL: http://127.0.0.1:{site.port}"
    for entries, host in [
        (["127.0.0.1"], "127.0.0.1"),
        (["127.0.0.0/8"], "127.0.0.1"),
        (["localhost"], "localhost"),
    ]:
        result = await fetch(
            registry(fetcher(AddressPolicy(entries))), f"http://{host}:{site.port}/"
        )
        assert result.success, (entries, result.error)
        assert "local service" in result.output
    other = await fetch(registry(fetcher(AddressPolicy(["127.0.0.1"]))), "http://10.0.0.1/")
    assert other.error_code is ErrorCode.DENIED_BY_POLICY
    hinted = AddressPolicy(hint="TOOLWIRE_WEB_ALLOW_HOSTS")
    refused = await fetch(registry(fetcher(hinted)), site.url("/"))
    assert refused.error.endswith("(allow them with TOOLWIRE_WEB_ALLOW_HOSTS)")


async def test_the_checked_address_is_the_one_connected_to(site: Site) -> None:
    """A name is resolved once per hop and the request goes to the address
    that was checked, with the name in the Host header."""
    site.routes["/pinned"] = html("<title>Pinned</title><p>ok</p>")
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[IPAddress]:
        asked.append(host)
        answers = {"docs.example.test": "127.0.0.1", "evil.example.test": "192.168.1.1"}
        return [ipaddress.ip_address(answers[host])]

    tools = registry(fetcher(AddressPolicy(["127.0.0.1"]), resolver=resolver))
    url = f"http://docs.example.test:{site.port}/pinned"
    result = await fetch(tools, url)
    assert result.success, result.error
    assert asked == ["docs.example.test"]
    assert site.seen[0].headers["host"] == f"docs.example.test:{site.port}"
    assert result.structured_output["final_url"] == url
    evil = await fetch(tools, f"http://evil.example.test:{site.port}/pinned")
    assert evil.error_code is ErrorCode.DENIED_BY_POLICY
    assert "resolves to a private address (192.168.1.1)" in evil.error

    async def unresolvable(host: str, port: int) -> list[IPAddress]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    missing = await fetch(registry(fetcher(resolver=unresolvable)), "http://nowhere.test/")
    assert missing.error_code is ErrorCode.HANDLER_ERROR
    assert missing.error == (
        "could not resolve the host 'nowhere.test' of 'http://nowhere.test/': "
        "Name or service not known"
    )


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for docs.example.test."""
    if shutil.which("openssl") is None:
        pytest.fail("the TLS test needs the openssl command (Debian package openssl)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=docs.example.test", "-addext", "subjectAltName=DNS:docs.example.test"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_https_to_a_pinned_address_still_verifies_the_name(
    certificate: tuple[Path, Path], make_site: Callable[..., Any]
) -> None:
    """The connection goes to the checked IP, yet TLS sends the name (SNI) and
    the certificate is verified against the name, not the IP."""
    cert, key = certificate
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    secure = make_site(server_tls)
    secure.routes["/pinned"] = html("<title>Secure</title><p>over TLS</p>")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    trusted = ssl.create_default_context(cafile=str(cert))
    tools = registry(fetcher(resolver=resolver, verify=trusted))
    url = f"https://docs.example.test:{secure.port}/pinned"
    result = await fetch(tools, url)
    assert result.success, result.error
    assert "over TLS" in result.output
    assert secure.seen[0].headers["host"] == f"docs.example.test:{secure.port}"
    by_ip = await fetch(tools, f"https://127.0.0.1:{secure.port}/pinned")
    assert by_ip.error_code is ErrorCode.HANDLER_ERROR
    assert "TLS failed" in by_ip.error
    assert "certificate verify failed" in by_ip.error


# --- web_search ---------------------------------------------------------------------------


async def search(tools: ToolRegistry, query: str, limit: int | None = None) -> ToolResult:
    arguments: dict[str, Any] = {"query": query}
    if limit is not None:
        arguments["limit"] = limit
    return await tools.dispatch("web_search", arguments)


def hits(*names: str) -> list[SearchHit]:
    return [
        SearchHit(title=f"{n} title", url=f"https://{n}.example/", snippet=f"about {n}")
        for n in names
    ]


async def test_the_chain_falls_through_to_the_first_provider_with_results() -> None:
    asked: list[str] = []

    async def broken(query: str, limit: int) -> list[SearchHit]:
        asked.append("broken")
        raise RuntimeError("service unavailable")

    async def empty(query: str, limit: int) -> list[SearchHit]:
        asked.append("empty")
        return []

    async def good(query: str, limit: int) -> list[SearchHit]:
        asked.append("good")
        return hits("a", "b", "c")[:limit]

    async def never(query: str, limit: int) -> list[SearchHit]:
        raise AssertionError("asked after an answer")

    chain = SearchChain([("broken", broken), ("empty", empty), ("good", good), ("never", never)])
    result = await search(registry(search=chain), "toolwire", limit=2)
    assert result.success, result.error
    assert asked == ["broken", "empty", "good"]
    assert result.output == (
        "Results for 'toolwire' from good:\n"
        "1. a title\n   https://a.example/\n   about a\n"
        "2. b title\n   https://b.example/\n   about b\n"
        "(skipped before good: broken: RuntimeError: service unavailable; empty: no results)"
    )
    assert result.structured_output == {
        "query": "toolwire",
        "provider": "good",
        "results": [h.model_dump() for h in hits("a", "b")],
        "skipped": [
            {"provider": "broken", "reason": "RuntimeError: service unavailable"},
            {"provider": "empty", "reason": "no results"},
        ],
    }


async def test_a_slow_provider_is_skipped_after_the_chain_timeout() -> None:
    async def slow(query: str, limit: int) -> list[SearchHit]:
        await asyncio.sleep(10)
        return []

    async def quick(query: str, limit: int) -> list[SearchHit]:
        return hits("q")

    chain = SearchChain([("slow", slow), ("quick", quick)], timeout=0.1)
    result = await search(registry(search=chain), "x")
    assert result.structured_output["provider"] == "quick"
    assert result.structured_output["skipped"] == [
        {"provider": "slow", "reason": "timed out after 0.1 s"}
    ]


async def test_when_every_provider_fails_the_error_names_each_failure() -> None:
    async def down(query: str, limit: int) -> list[SearchHit]:
        raise ConnectionError("connection refused")

    async def quota(query: str, limit: int) -> list[SearchHit]:
        raise RuntimeError("quota exhausted")

    chain = SearchChain([("first", down), ("second", quota)])
    result = await search(registry(search=chain), "x")
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == (
        "web search failed: every search provider failed — first: ConnectionError: "
        "connection refused; second: RuntimeError: quota exhausted"
    )


async def test_when_providers_find_nothing_the_answer_is_empty() -> None:
    async def empty(query: str, limit: int) -> list[SearchHit]:
        return []

    result = await search(registry(search=SearchChain([("a", empty), ("b", empty)])), "zzz")
    assert result.success
    assert result.output == "No results for 'zzz' (a: no results; b: no results)."
    assert result.structured_output["provider"] is None


async def test_without_a_provider_web_search_says_how_to_configure_one() -> None:
    result = await search(registry(search=None), "anything")
    assert result.error_code is ErrorCode.HANDLER_ERROR
    assert result.error == NO_SEARCH_PROVIDER
    assert result.error.startswith("no search provider is configured (set ")
    assert build_search_chain() is None


async def test_a_plain_search_function_works_and_arguments_are_checked() -> None:
    async def plain(query: str, limit: int) -> list[SearchHit]:
        return hits("p", "q", "r")

    tools = registry(search=plain)
    result = await search(tools, "x", limit=1)
    assert result.structured_output["provider"] == "search"
    assert len(result.structured_output["results"]) == 1
    for bad in ({"query": "x", "limit": 0}, {"query": "x", "limit": 21}, {"query": ""}, {}):
        failed = await tools.dispatch("web_search", bad)
        assert failed.error_code is ErrorCode.INVALID_ARGUMENTS, bad
    blank = await search(tools, "   ")
    assert blank.error_code is ErrorCode.INVALID_ARGUMENTS


# --- the SearXNG and Brave providers against fakes ------------------------------------------

SEARXNG_ANSWER = {
    "query": "toolwire",
    "number_of_results": 3,
    "results": [
        {
            "url": "https://one.example/",
            "title": "One &amp; only",
            "content": "The <b>first</b> result",
            "engine": "duckduckgo",
            "score": 2.0,
        },
        {"url": "https://two.example/", "title": "Two", "content": "", "engine": "bing"},
        {"title": "no url, skipped"},
        {"url": "https://three.example/", "title": "", "content": "untitled"},
    ],
    "answers": [],
    "suggestions": [],
    "unresponsive_engines": [],
}

BRAVE_ANSWER = {
    "type": "search",
    "query": {"original": "toolwire"},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "Brave <strong>one</strong>",
                "url": "https://b1.example/",
                "description": "A <strong>toolwire</strong> page &quot;quoted&quot;",
            },
            {"title": "Brave two", "url": "https://b2.example/", "description": "second"},
        ],
    },
}


def json_reply(data: Any, status: int = 200) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.reply(status, json.dumps(data).encode(), "application/json")

    return route


async def test_searxng_speaks_its_json_api(site: Site) -> None:
    site.routes["/searxng/search"] = json_reply(SEARXNG_ANSWER)
    provider = SearxngSearch(site.url("/searxng/"), timeout=2, language="en", trust_env=False)
    found = await provider("toolwire", 5)
    assert found == [
        SearchHit(title="One & only", url="https://one.example/", snippet="The first result"),
        SearchHit(title="Two", url="https://two.example/", snippet=""),
        SearchHit(title="https://three.example/", url="https://three.example/", snippet="untitled"),
    ]
    request = site.seen[-1]
    assert request.query == {
        "q": ["toolwire"],
        "format": ["json"],
        "pageno": ["1"],
        "language": ["en"],
    }
    assert len(await provider("toolwire", 2)) == 2


async def test_searxng_failures_are_explained(site: Site) -> None:
    site.routes["/off/search"] = lambda h: h.reply(403, b"Forbidden", "text/plain")
    site.routes["/html/search"] = lambda h: h.reply(200, b"<html></html>", "text/html")
    with pytest.raises(
        Exception, match=r"answered HTTP 403 Forbidden \(is the JSON format enabled"
    ):
        await SearxngSearch(site.url("/off"), trust_env=False)("q", 5)
    with pytest.raises(SearchError, match="answered something that is not JSON"):
        await SearxngSearch(site.url("/html"), trust_env=False)("q", 5)
    port = free_port()
    with pytest.raises(
        SearchError, match=r"could not connect to SearXNG at .*: connection refused"
    ):
        await SearxngSearch(f"http://127.0.0.1:{port}", trust_env=False)("q", 5)


async def test_brave_sends_the_key_and_reads_web_results(site: Site) -> None:
    site.routes["/res/v1/web/search"] = json_reply(BRAVE_ANSWER)
    brave = BraveSearch("secret-key", endpoint=site.url("/res/v1/web/search"), trust_env=False)
    assert "secret-key" not in repr(brave)
    found = await brave("toolwire", 50)
    assert found[0] == SearchHit(
        title="Brave one", url="https://b1.example/", snippet='A toolwire page "quoted"'
    )
    assert len(found) == 2
    request = site.seen[-1]
    assert request.headers["x-subscription-token"] == "secret-key"
    assert request.query == {"q": ["toolwire"], "count": ["20"]}

    site.routes["/nothing"] = json_reply({"type": "search", "query": {"original": "x"}})
    assert await BraveSearch("k", endpoint=site.url("/nothing"), trust_env=False)("x", 5) == []
    site.routes["/denied"] = json_reply({"error": "invalid token"}, status=401)
    with pytest.raises(SearchError, match=r"HTTP 401 Unauthorized \(the API key was rejected\)"):
        await BraveSearch("bad", endpoint=site.url("/denied"), trust_env=False)("x", 5)


async def test_web_search_over_real_providers_names_the_one_that_answered(site: Site) -> None:
    site.routes["/res/v1/web/search"] = json_reply(BRAVE_ANSWER)
    down = f"http://127.0.0.1:{free_port()}"
    chain = SearchChain(
        [
            ("searxng", SearxngSearch(down, timeout=1, trust_env=False)),
            ("brave", BraveSearch("k", endpoint=site.url("/res/v1/web/search"), trust_env=False)),
        ],
        timeout=2,
    )
    result = await search(registry(search=chain), "toolwire", limit=1)
    assert result.success, result.error
    assert result.output.startswith("Results for 'toolwire' from brave:\n1. Brave one")
    assert f"searxng: could not connect to SearXNG at {down}: connection refused" in result.output
    assert result.structured_output["provider"] == "brave"
    configured = build_search_chain(searxng_url=down, brave_api_key="k")
    assert configured is not None and configured.names == ["searxng", "brave"]


# --- a custom fetch port -------------------------------------------------------------------------


async def test_any_fetch_function_can_stand_in() -> None:
    async def canned(url: str) -> FetchedPage:
        return FetchedPage(url=url, status=200, content_type="text/plain", text="canned")

    result = await fetch(registry(canned), "https://example.com/")
    assert result.success
    assert result.output == "URL: https://example.com/\n\ncanned"
