"""The file tools through `ToolRegistry.dispatch`, on real files under tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.builtin.files import file_tools
from toolwire.models import ErrorCode, SafetyTier, ToolResult
from toolwire.registry import ToolRegistry
from toolwire.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("SECRET\n")
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


@pytest.fixture
def root(ws: Workspace) -> Path:
    return ws.root


def make_registry(ws: Workspace, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    for t in file_tools(ws, **options):
        registry.register(t)
    return registry


@pytest.fixture
def registry(ws: Workspace) -> Iterator[ToolRegistry]:
    registry = make_registry(ws)
    yield registry
    registry.close()


async def call(registry: ToolRegistry, name: str, **arguments: Any) -> ToolResult:
    return await registry.dispatch(name, arguments)


def assert_ok(result: ToolResult) -> ToolResult:
    assert result.success, result.error
    return result


def assert_invalid(result: ToolResult, *fragments: str) -> None:
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS, result
    for fragment in fragments:
        assert fragment in result.error


def assert_denied(result: ToolResult, root: Path) -> None:
    assert result.error_code is ErrorCode.DENIED_BY_POLICY, result
    assert result.error.startswith("path traversal denied:")
    assert str(root) in result.error


def test_definitions_have_their_tiers_and_group(ws: Workspace) -> None:
    tiers = {t.definition.name: t.definition.safety_tier for t in file_tools(ws)}
    assert tiers == {
        "file_read": SafetyTier.READ_ONLY,
        "file_write": SafetyTier.SIDE_EFFECTING,
        "file_edit": SafetyTier.SIDE_EFFECTING,
        "file_search": SafetyTier.READ_ONLY,
        "file_list": SafetyTier.READ_ONLY,
        "file_delete": SafetyTier.SIDE_EFFECTING,
    }
    assert {t.definition.group for t in file_tools(ws)} == {"fs"}
    search = next(t for t in file_tools(ws) if t.definition.name == "file_search")
    assert search.definition.input_schema is not None
    assert search.definition.input_schema["properties"]["type"]["enum"] == ["glob", "grep"]


# --- read and write ------------------------------------------------------------


async def test_write_creates_folders_and_read_returns_the_content(
    registry: ToolRegistry, root: Path
) -> None:
    written = assert_ok(await call(registry, "file_write", path="a/b/c.txt", content="héllo\n"))
    assert written.structured_output == {"path": "a/b/c.txt", "bytes_written": 7, "created": True}
    assert "wrote 7 bytes to 'a/b/c.txt'" in written.output
    assert (root / "a" / "b" / "c.txt").read_text() == "héllo\n"
    assert assert_ok(await call(registry, "file_read", path="a/b/c.txt")).output == "héllo\n"

    (root / "a" / "b" / "c.txt").chmod(0o640)
    again = assert_ok(await call(registry, "file_write", path="a/b/c.txt", content="new"))
    assert again.structured_output["created"] is False
    assert (root / "a" / "b" / "c.txt").read_text() == "new"
    assert (root / "a" / "b" / "c.txt").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in (root / "a" / "b").iterdir()] == ["c.txt"]  # no temporary left


async def test_an_absolute_path_inside_the_root_is_allowed(
    registry: ToolRegistry, root: Path
) -> None:
    assert_ok(await call(registry, "file_write", path=str(root / "abs.txt"), content="x"))
    assert assert_ok(await call(registry, "file_read", path=str(root / "abs.txt"))).output == "x"


async def test_ranges_come_with_numbered_lines(registry: ToolRegistry, root: Path) -> None:
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    ranged = assert_ok(await call(registry, "file_read", path="f.txt", start_line=11, end_line=12))
    assert ranged.output == "  11│ line 11\n  12│ line 12"
    tail = assert_ok(await call(registry, "file_read", path="f.txt", start_line=19))
    assert tail.output == "  19│ line 19\n  20│ line 20"
    head = assert_ok(await call(registry, "file_read", path="f.txt", end_line=2))
    assert head.output == "   1│ line 1\n   2│ line 2"
    past = assert_ok(await call(registry, "file_read", path="f.txt", start_line=20, end_line=30))
    assert past.output == "  20│ line 20\n[end of file: 'f.txt' has 20 lines]"


async def test_bad_ranges_are_invalid_arguments(registry: ToolRegistry, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\n")
    assert_invalid(
        await call(registry, "file_read", path="f.txt", start_line=3, end_line=2),
        "end_line (2) is before start_line (3)",
    )
    assert_invalid(
        await call(registry, "file_read", path="f.txt", start_line=5),
        "start_line 5 is past the end of 'f.txt', which has 2 lines",
    )
    assert_invalid(await call(registry, "file_read", path="f.txt", start_line=0), "start_line")


async def test_large_files_are_refused_whole_and_read_in_ranges(ws: Workspace) -> None:
    registry = make_registry(ws, max_read_bytes=1000)
    (ws.root / "big.log").write_text("".join(f"entry {i:04}\n" for i in range(500)))
    whole = await call(registry, "file_read", path="big.log")
    assert_invalid(whole, "'big.log' is 5,500 bytes (500 lines)", "start_line and end_line")
    ranged = assert_ok(await call(registry, "file_read", path="big.log", start_line=1))
    assert ranged.output.startswith("   1│ entry 0000\n")
    last = ranged.output.splitlines()[-1]
    assert last.startswith("[stopped before line ") and "continue with start_line=" in last
    assert len(ranged.output.encode()) <= 1000


async def test_binary_empty_missing_and_folders(registry: ToolRegistry, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x00\x00\x01")
    (root / "empty.txt").write_text("")
    (root / "dir").mkdir()
    assert_invalid(await call(registry, "file_read", path="img.png"), "'img.png' is a binary file")
    assert assert_ok(await call(registry, "file_read", path="empty.txt")).output == (
        "['empty.txt' is empty]"
    )
    assert_invalid(
        await call(registry, "file_read", path="nope/missing.txt"),
        "no such file or folder: 'nope/missing.txt'",
    )
    assert_invalid(await call(registry, "file_read", path="dir"), "'dir' is a folder")
    assert_invalid(await call(registry, "file_write", path="dir", content="x"), "'dir' is a folder")
    assert_invalid(await call(registry, "file_read"), "missing required field 'path'")


# --- edit ----------------------------------------------------------------------

SOURCE = """def greet(name):
    print("hello", name)


def part(name):
    print("bye", name)
    print("bye", name)
"""


async def test_edit_replaces_a_unique_snippet(registry: ToolRegistry, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    result = assert_ok(
        await call(
            registry,
            "file_edit",
            path="m.py",
            old='    print("hello", name)',
            new='    print("hi", name)\n    return name',
        )
    )
    assert result.output == "edited 'm.py': replaced 1 line at line 2 with 2 lines"
    assert (
        (root / "m.py")
        .read_text()
        .startswith('def greet(name):\n    print("hi", name)\n    return name\n')
    )


async def test_edit_of_an_absent_snippet_shows_the_closest_lines(
    registry: ToolRegistry, root: Path
) -> None:
    (root / "m.py").write_text(SOURCE)
    result = await call(registry, "file_edit", path="m.py", old='print("helo", name)', new="pass")
    assert_invalid(result, "'old' was not found in 'm.py'", "The closest lines:")
    assert '    2│     print("hello", name)' in result.error
    assert (root / "m.py").read_text() == SOURCE

    spaced = await call(
        registry, "file_edit", path="m.py", old='print("hello",   name)', new="pass"
    )
    assert_invalid(spaced, "different whitespace or indentation")


async def test_edit_of_an_ambiguous_snippet_names_the_matches(
    registry: ToolRegistry, root: Path
) -> None:
    (root / "m.py").write_text(SOURCE)
    result = await call(registry, "file_edit", path="m.py", old='print("bye", name)', new="x")
    assert_invalid(result, "'old' occurs 2 times in 'm.py' (at lines 6, 7)", "surrounding text")
    assert (root / "m.py").read_text() == SOURCE


async def test_edit_other_cases(registry: ToolRegistry, root: Path) -> None:
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert_ok(await call(registry, "file_edit", path="crlf.txt", old="one\ntwo", new="1\n2"))
    assert (root / "crlf.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    assert_invalid(
        await call(registry, "file_edit", path="crlf.txt", old="x", new="x"), "are the same"
    )
    assert_invalid(await call(registry, "file_edit", path="crlf.txt", old="", new="x"), "'old'")
    assert_invalid(
        await call(registry, "file_edit", path="gone.txt", old="a", new="b"),
        "no such file or folder: 'gone.txt'",
    )
    assert_invalid(
        await call(registry, "file_write", path="s.txt", content="\ud800"), "lone surrogate"
    )
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    assert_invalid(
        await call(registry, "file_edit", path="latin1.txt", old="caf", new="x"),
        "not valid UTF-8",
    )


# --- search --------------------------------------------------------------------


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import pkg\nprint('TODO: main')\n")
    (root / "src" / "pkg" / "util.py").write_text("# TODO: util\nx = 1\n")
    (root / "src" / "pkg" / "data.bin").write_bytes(b"TODO\x00\x01")
    (root / "README.md").write_text("TODO readme\n")
    (root / ".git").mkdir()
    (root / ".git" / "hooks.py").write_text("TODO\n")
    return root


async def test_glob_by_name_and_by_path(registry: ToolRegistry, tree: Path) -> None:
    by_name = assert_ok(await call(registry, "file_search", pattern="*.py"))
    assert by_name.structured_output["paths"] == ["src/main.py", "src/pkg/util.py"]
    assert by_name.output.startswith("2 paths matching '*.py' under '.':")
    by_path = assert_ok(await call(registry, "file_search", pattern="pkg/*", path="src"))
    assert by_path.structured_output["paths"] == ["src/pkg/data.bin", "src/pkg/util.py"]
    deep = assert_ok(await call(registry, "file_search", pattern="src/**/*.py"))
    assert deep.structured_output["paths"] == ["src/main.py", "src/pkg/util.py"]
    folders = assert_ok(await call(registry, "file_search", pattern="p?g", type="glob"))
    assert folders.structured_output["paths"] == ["src/pkg/"]
    none = assert_ok(await call(registry, "file_search", pattern="*.rs"))
    assert none.output == "no paths match '*.rs' under '.'"


async def test_grep_finds_lines_and_skips_binary_files(registry: ToolRegistry, tree: Path) -> None:
    result = assert_ok(await call(registry, "file_search", pattern=r"TODO:?\s", type="grep"))
    assert result.output.splitlines() == [
        "3 matching lines in 3 files under '.' (1 binary file skipped):",
        "README.md:1: TODO readme",
        "src/main.py:2: print('TODO: main')",
        "src/pkg/util.py:1: # TODO: util",
    ]
    one_file = assert_ok(
        await call(registry, "file_search", pattern="x =", type="grep", path="src/pkg/util.py")
    )
    assert one_file.structured_output["matches"] == [
        {"path": "src/pkg/util.py", "line": 2, "text": "x = 1"}
    ]


async def test_grep_with_a_bad_regex_is_invalid(registry: ToolRegistry, tree: Path) -> None:
    assert_invalid(
        await call(registry, "file_search", pattern="(unclosed", type="grep"),
        "'pattern' is not a valid regular expression",
    )
    assert_invalid(
        await call(registry, "file_search", pattern="x", type="regex"), "must be one of glob, grep"
    )
    assert_invalid(await call(registry, "file_search", pattern="x", path="nope"), "no such folder")


async def test_search_results_are_capped_with_a_note(ws: Workspace) -> None:
    registry = make_registry(ws, max_search_results=3)
    for i in range(6):
        (ws.root / f"f{i}.txt").write_text("hit\nhit\n")
    globbed = assert_ok(await call(registry, "file_search", pattern="*.txt"))
    assert globbed.structured_output["paths"] == ["f0.txt", "f1.txt", "f2.txt"]
    assert globbed.structured_output["more"] is True
    assert "narrow the pattern or the path" in globbed.output
    grepped = assert_ok(await call(registry, "file_search", pattern="hit", type="grep"))
    assert len(grepped.structured_output["matches"]) == 3
    assert grepped.output.startswith("3 matching lines+ in 2 files")
    assert "narrow the pattern or the path" in grepped.output


# --- list and delete -----------------------------------------------------------


async def test_list_sorts_folders_first_with_sizes(registry: ToolRegistry, root: Path) -> None:
    (root / "zdir").mkdir()
    (root / "adir").mkdir()
    (root / "b.txt").write_text("12345")
    (root / "a.txt").write_text("")
    (root / "link").symlink_to("b.txt")
    result = assert_ok(await call(registry, "file_list"))
    assert result.output.splitlines() == [
        "'.': 5 entries (2 folders, 3 files)",
        "adir/",
        "zdir/",
        "a.txt  0 bytes",
        "b.txt  5 bytes",
        "link -> b.txt  (symbolic link)",
    ]
    assert result.structured_output["entries"][0] == {"name": "adir", "type": "dir", "size": None}
    assert assert_ok(await call(registry, "file_list", path="adir")).output == "'adir' is empty"
    assert_invalid(await call(registry, "file_list", path="b.txt"), "'b.txt' is a file")
    assert_invalid(await call(registry, "file_list", path="nope"), "no such file or folder: 'nope'")


async def test_delete_files_and_folders(registry: ToolRegistry, root: Path) -> None:
    (root / "f.txt").write_text("x")
    (root / "empty").mkdir()
    (root / "full" / "sub").mkdir(parents=True)
    (root / "full" / "sub" / "g.txt").write_text("y")
    assert assert_ok(await call(registry, "file_delete", path="f.txt")).output == (
        "deleted the file 'f.txt'"
    )
    assert not (root / "f.txt").exists()
    assert_ok(await call(registry, "file_delete", path="empty"))
    assert not (root / "empty").exists()
    assert_invalid(
        await call(registry, "file_delete", path="full"),
        "folder 'full' is not empty (1 entry); pass recursive=true",
    )
    gone = assert_ok(await call(registry, "file_delete", path="full", recursive=True))
    assert gone.output == "deleted the folder 'full' and the 2 entries it held"
    assert not (root / "full").exists()
    assert_invalid(
        await call(registry, "file_delete", path="f.txt"), "no such file or folder: 'f.txt'"
    )


@pytest.mark.parametrize("path", [".", "sub/..", "ROOT", "ROOT/"])
async def test_deleting_the_root_is_refused(registry: ToolRegistry, root: Path, path: str) -> None:
    (root / "sub").mkdir()
    path = path.replace("ROOT", str(root))
    result = await call(registry, "file_delete", path=path, recursive=True)
    assert result.error_code is ErrorCode.DENIED_BY_POLICY
    assert "refusing to delete the workspace root" in result.error
    assert (root / "sub").is_dir()


async def test_deleting_a_link_removes_the_link_not_its_target(
    registry: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    result = assert_ok(await call(registry, "file_delete", path="out", recursive=True))
    assert result.output == "deleted the symbolic link 'out'"
    assert not (root / "out").is_symlink()
    assert (outside / "secret.txt").read_text() == "SECRET\n"


# --- confinement ---------------------------------------------------------------

TRAVERSALS = ["..", "../../etc/passwd", "/etc/passwd", "a/../../outside/secret.txt"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("file_read", {}),
    ("file_write", {"content": "pwned"}),
    ("file_edit", {"old": "SECRET", "new": "pwned"}),
    ("file_list", {}),
    ("file_search", {"pattern": "*"}),
    ("file_search", {"pattern": "SECRET", "type": "grep"}),
    ("file_delete", {}),
]


@pytest.mark.parametrize("path", TRAVERSALS)
@pytest.mark.parametrize(("name", "extra"), CALLS)
async def test_paths_outside_the_root_are_denied(
    registry: ToolRegistry,
    root: Path,
    outside: Path,
    path: str,
    name: str,
    extra: dict[str, Any],
) -> None:
    result = await call(registry, name, path=path, **extra)
    assert_denied(result, root)
    assert f"path traversal denied: {path!r} resolves outside the workspace" in result.error
    assert (outside / "secret.txt").read_text() == "SECRET\n"


@pytest.fixture
def links(root: Path, outside: Path) -> Path:
    """`out` → the outside folder, `secret` → a file in it."""
    (root / "out").symlink_to(outside)
    (root / "secret").symlink_to(outside / "secret.txt")
    (root / "inside.txt").write_text("inside\n")
    (root / "alias").symlink_to("inside.txt")
    return root


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("file_read", {"path": "secret"}),
        ("file_read", {"path": "out/secret.txt"}),
        ("file_write", {"path": "secret", "content": "pwned"}),
        ("file_write", {"path": "out/new.txt", "content": "pwned"}),
        ("file_write", {"path": "out/deep/new.txt", "content": "pwned"}),
        ("file_edit", {"path": "secret", "old": "SECRET", "new": "pwned"}),
        ("file_list", {"path": "out"}),
        ("file_search", {"pattern": "*", "path": "out"}),
        ("file_search", {"pattern": "SECRET", "type": "grep", "path": "out"}),
        ("file_search", {"pattern": "SECRET", "type": "grep", "path": "secret"}),
        ("file_delete", {"path": "out/secret.txt"}),
    ],
)
async def test_links_pointing_out_are_denied(
    registry: ToolRegistry,
    links: Path,
    outside: Path,
    name: str,
    arguments: dict[str, Any],
) -> None:
    result = await call(registry, name, **arguments)
    assert_denied(result, links)
    assert "through a symbolic link" in result.error
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "SECRET\n"


async def test_searching_the_root_does_not_follow_links_out(
    registry: ToolRegistry, links: Path
) -> None:
    globbed = assert_ok(await call(registry, "file_search", pattern="secret*"))
    assert globbed.structured_output["paths"] == ["secret (symbolic link)"]
    grepped = assert_ok(await call(registry, "file_search", pattern="SECRET", type="grep"))
    assert grepped.structured_output["matches"] == []
    listed = assert_ok(await call(registry, "file_list"))
    assert "out -> " in listed.output  # the link is listed, not entered


async def test_links_inside_the_root_work(registry: ToolRegistry, links: Path) -> None:
    assert assert_ok(await call(registry, "file_read", path="alias")).output == "inside\n"
    assert_ok(await call(registry, "file_write", path="alias", content="changed\n"))
    assert (links / "inside.txt").read_text() == "changed\n"
    assert (links / "alias").is_symlink()


@pytest.mark.parametrize(("name", "extra"), CALLS)
async def test_nul_bytes_in_names_are_invalid_arguments(
    registry: ToolRegistry, name: str, extra: dict[str, Any]
) -> None:
    result = await call(registry, name, path="a\x00b.txt", **extra)
    assert_invalid(result, "contains a NUL byte")


async def test_a_fifo_is_not_read(registry: ToolRegistry, root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert_invalid(await call(registry, "file_read", path="pipe"), "not a regular file")
