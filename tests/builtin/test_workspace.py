"""The Workspace port: resolution, confinement, and opening without following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolwire.workspace import InvalidPathError, PathTraversalError, Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("SECRET\n")
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def test_the_root_is_created_and_canonical(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    ws = Workspace(tmp_path / "alias" / "new" / "root")
    assert ws.root == (tmp_path / "real" / "new" / "root").resolve()
    assert ws.root.is_dir()


def test_relative_and_absolute_paths_inside_resolve(ws: Workspace) -> None:
    assert ws.resolve("a/b.txt") == ws.root / "a" / "b.txt"
    assert ws.resolve(".") == ws.root
    assert ws.resolve("a/../b") == ws.root / "b"
    assert ws.resolve(str(ws.root / "x")) == ws.root / "x"
    assert ws.display(ws.resolve("a/b")) == "a/b"
    assert ws.display(ws.root) == "."


@pytest.mark.parametrize("path", ["..", "../../etc/passwd", "/etc/passwd", "a/../../x", "/"])
def test_paths_outside_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(PathTraversalError) as caught:
        ws.resolve(path)
    message = str(caught.value)
    assert message.startswith(f"path traversal denied: {path!r} resolves outside the workspace")
    assert str(ws.root) in message


def test_links_pointing_out_are_refused_also_for_paths_to_create(
    ws: Workspace, outside: Path
) -> None:
    (ws.root / "out").symlink_to(outside)
    (ws.root / "secret").symlink_to(outside / "secret.txt")
    for path in ("out", "out/secret.txt", "out/new/file.txt", "secret"):
        with pytest.raises(PathTraversalError, match="through a symbolic link"):
            ws.resolve(path)
    with pytest.raises(PathTraversalError):
        ws.resolve_entry("out/secret.txt")
    # the link itself (not its target) is an entry of the workspace
    assert ws.resolve_entry("out") == ws.root / "out"


def test_links_inside_are_followed(ws: Workspace) -> None:
    (ws.root / "real").mkdir()
    (ws.root / "alias").symlink_to("real")
    assert ws.resolve("alias/f.txt") == ws.root / "real" / "f.txt"
    assert ws.resolve_entry("alias") == ws.root / "alias"


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "empty"),
        ("a\x00b", "NUL byte"),
        ("a\nb", "control characters"),
        ("x" * 256, "limit is 255"),
        ("a/" * 2100, "limit is 4,096"),
        ("\udfff\ud800", "cannot be encoded"),
    ],
)
def test_invalid_names_are_refused_clearly(ws: Workspace, path: str, problem: str) -> None:
    with pytest.raises(InvalidPathError, match=problem):
        ws.resolve(path)


def test_a_link_loop_is_an_invalid_path(ws: Workspace) -> None:
    (ws.root / "loop").symlink_to("loop")
    with pytest.raises(InvalidPathError, match="loop"):
        ws.resolve("loop")


def test_open_creates_parents_and_refuses_a_link_swapped_in_after_the_check(
    ws: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fd = ws.open("d/e/f.txt", os.O_WRONLY | os.O_CREAT, create_parents=True)
    os.write(fd, b"x")
    os.close(fd)
    assert (ws.root / "d" / "e" / "f.txt").read_text() == "x"

    # Between the check and the open, 'd' becomes a link to the outside: the
    # component walk with O_NOFOLLOW refuses it instead of following it.
    stale = ws.resolve("d/e/f.txt")
    os.rename(ws.root / "d", ws.root / "d-old")
    (ws.root / "d").symlink_to(outside)
    (outside / "e").mkdir()
    (outside / "e" / "f.txt").write_text("outside")
    monkeypatch.setattr(Workspace, "resolve", lambda self, path: stale)
    with pytest.raises(PathTraversalError, match="symbolic link"):
        ws.open("d/e/f.txt")
    # the same for the last component
    monkeypatch.setattr(Workspace, "resolve", lambda self, path: ws.root / "d-old" / "e" / "f")
    (ws.root / "d-old" / "e" / "f").symlink_to(outside / "secret.txt")
    with pytest.raises(PathTraversalError, match="symbolic link"):
        ws.open("d-old/e/f")


def test_walk_reports_links_without_following_them(ws: Workspace, outside: Path) -> None:
    (ws.root / "a").mkdir()
    (ws.root / "a" / "x.txt").write_text("hello")
    (ws.root / ".git").mkdir()
    (ws.root / ".git" / "config").write_text("")
    (ws.root / "out").symlink_to(outside)
    seen = {(e.path, e.kind, e.size) for e in ws.walk(skip={".git"})}
    assert seen == {
        (".git", "dir", 0),
        ("a", "dir", 0),
        ("a/x.txt", "file", 5),
        ("out", "symlink", 0),
    }
    assert [e.path for e in ws.walk("a")] == ["a/x.txt"]
