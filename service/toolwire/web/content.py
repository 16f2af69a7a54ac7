"""From response bytes to text a model reads: types, charsets, HTML → Markdown.

- Media types: HTML becomes Markdown; text, JSON, XML, YAML, JavaScript and
  CSV are read as they are; anything else (images, PDFs, archives, octet
  streams, audio, video, fonts) is refused by type before its body is read.
  A response without a type is sniffed: HTML or text, unless it has NUL
  bytes.
- Charsets: the `Content-Type` charset, else a byte-order mark, else an
  HTML `<meta>` (or XML declaration) near the start, else UTF-8. Latin-1 and
  ASCII labels mean windows-1252, as browsers read them; unknown labels fall
  back to UTF-8. Bytes that do not decode become U+FFFD: a page with a bad
  byte is still read.
- HTML: scripts, styles, navigation, footers, asides, forms' controls, hidden
  elements and comments are dropped; a `<main>` element with real content is
  preferred over the whole body; links are made absolute so that the model
  can fetch them; images are reduced to their alt text.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urljoin

import markdownify
from bs4 import BeautifulSoup, Comment, Tag

__all__ = ["content_kind", "decode_text", "html_to_markdown", "media_type", "sniff_kind"]

ContentKind = Literal["html", "text"]

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
        "application/graphql",
        "application/x-sh",
        "application/x-www-form-urlencoded",
    }
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_LATIN1_LABELS = frozenset(
    {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii", "cp819"}
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)

_NOISE = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "nav",
    "footer",
    "aside",
    "button",
    "input",
    "select",
    "textarea",
    "dialog",
    "head",
)
_NOISE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "dialog", "menu"})
_MAIN_MIN_CHARS = 200


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """The media type (lower case, no parameters) and the charset parameter."""
    if not content_type:
        return "", None
    kind, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return kind.strip().lower(), charset


def content_kind(mime: str) -> ContentKind | None:
    """How a media type is read, or None when it is not text."""
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES:
        return "text"
    if mime.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return None


def sniff_kind(data: bytes) -> ContentKind | None:
    """For a response without a type: HTML, text, or None when it looks binary."""
    head = data[:1024]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "text"
    if b"\x00" in head:
        return None
    return "html" if _HTML_START.match(data[:2048]) else "text"


def _usable(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    if label in _LATIN1_LABELS:
        return "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def decode_text(
    data: bytes, declared: str | None, kind: ContentKind, *, truncated: bool = False
) -> str:
    """The body as text, never raising on bad bytes (they become U+FFFD)."""
    charset = _usable(declared)
    if charset is None:
        for bom, name in (
            (codecs.BOM_UTF8, "utf-8-sig"),
            (codecs.BOM_UTF16_LE, "utf-16"),
            (codecs.BOM_UTF16_BE, "utf-16"),
        ):
            if data.startswith(bom):
                charset = name
                break
    if charset is None and kind == "html":
        found = _META_CHARSET.search(data[:4096])
        charset = _usable(found.group(1).decode("ascii")) if found else None
    if charset is None:
        found = _XML_ENCODING.match(data[:256])
        charset = _usable(found.group(1).decode("ascii")) if found else None
    if charset in (None, "utf-8") and data.startswith(codecs.BOM_UTF8):
        charset = "utf-8-sig"
    text = data.decode(charset or "utf-8", errors="replace")
    if truncated:
        text = text.rstrip("\ufffd")  # a character cut in half at the size cap
    return text.replace("\r\n", "\n").replace("\r", "\n")


def html_to_markdown(html: str, base_url: str) -> tuple[str, str | None]:
    """Markdown of the page's content, and the page's title."""
    soup = BeautifulSoup(html, "html.parser")
    title = _title(soup)
    base = soup.find("base", href=True)
    if isinstance(base, Tag):
        base_url = urljoin(base_url, str(base["href"]))
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    _drop(soup.find_all(_NOISE))
    _drop(soup.find_all(_is_hidden))
    for link in soup.find_all("a"):
        _absolutize_link(link, base_url)
    for image in soup.find_all("img"):
        alt = " ".join(str(image.get("alt") or "").split())
        if alt:
            image.replace_with(f"[image: {alt}]")
        else:
            image.decompose()
    root = _content_root(soup)
    converter = markdownify.MarkdownConverter(
        heading_style="ATX",
        bullets="-",
        escape_underscores=False,
        escape_asterisks=False,
    )
    markdown = str(converter.convert_soup(root))
    if title is None:
        heading = soup.find("h1")
        if isinstance(heading, Tag):
            title = " ".join(heading.get_text(" ").split()) or None
    return _tidy(markdown), title


def _drop(elements: Iterable[Tag]) -> None:
    for element in elements:
        if not element.decomposed:  # an ancestor may have gone already
            element.decompose()


def _title(soup: BeautifulSoup) -> str | None:
    if soup.title is None:
        return None
    return " ".join(soup.title.get_text(" ").split()) or None


def _is_hidden(tag: Tag) -> bool:
    if tag.attrs is None:  # already decomposed with an ancestor
        return False
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    if str(tag.get("role", "")).lower() in _NOISE_ROLES:
        return True
    style = str(tag.get("style", "")).replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _absolutize_link(link: Tag, base_url: str) -> None:
    href = str(link.get("href") or "").strip()
    if not href or href.startswith("#") or href.lower().startswith(("javascript:", "data:")):
        link.unwrap()
        return
    link.attrs = {"href": urljoin(base_url, href)}


def _content_root(soup: BeautifulSoup) -> Tag:
    for candidate in (soup.find("main"), soup.find(None, {"role": "main"})):
        if isinstance(candidate, Tag) and len(candidate.get_text(strip=True)) >= _MAIN_MIN_CHARS:
            return candidate
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup


def _tidy(markdown: str) -> str:
    lines = [line.rstrip() for line in markdown.splitlines()]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
