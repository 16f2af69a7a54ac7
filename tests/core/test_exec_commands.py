"""Exec allowlist matching: a pattern vouches for the simple commands it sees,
and nothing in a line can smuggle another command past it."""

from __future__ import annotations

import fnmatch
import random
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolwire.policy.commands import (
    CommandMatch,
    CommandProblem,
    match_command,
    simple_commands,
    validate_pattern,
)

LS = ["ls*"]
SEPARATORS = [";", "&&", "||", "|", "&", "|&", "\n"]


def refused(command: str, patterns: list[str] = LS) -> str:
    match = match_command(command, patterns)
    assert not match.matched, command
    assert match.patterns == ()
    assert match.pattern is None
    return match.reason


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("ls; rm -rf /", "'rm -rf /' (the 2nd command of the line) matches no allowlist pattern"),
        ("ls && rm -rf /", "'rm -rf /' (the 2nd command"),
        ("ls || rm -rf /", "'rm -rf /' (the 2nd command"),
        ("ls | sh", "'sh' (the 2nd command"),
        ("ls |& sh", "'sh' (the 2nd command"),
        ("ls\nrm -rf /", "'rm -rf /' (the 2nd command"),
        ("ls & rm -rf /", "'rm -rf /' (the 2nd command"),
        ("ls $(rm -rf /)", "command substitution '$('"),
        ("ls `rm -rf /`", "command substitution '`'"),
        ('ls "$(x)"', "command substitution '$('"),
        ('ls "`x`"', "command substitution '`'"),
        ("ls $((1 + 2))", "arithmetic expansion '$(('"),
        ("ls ${HOME}", "parameter expansion '${'"),
        ('ls "${HOME}"', "parameter expansion '${'"),
        ("ls \\$(x)", "command substitution '$('"),
        ('ls "\\$(x)"', "command substitution '$('"),
        ("ls > /etc/passwd", "the redirection '>'"),
        ("ls >> log", "the redirection '>>'"),
        ("ls < secret", "the redirection '<'"),
        ("ls >| log", "the redirection '>|'"),
        ("ls &> log", "the redirection '&>'"),
        ("ls >&log", "the redirection '>&'"),
        ("ls <> f", "the redirection '<>'"),
        ("cat <<EOF\nx\nEOF", "a here-document '<<'"),
        ("ls <(rm -rf /)", "process substitution '<('"),
        ("ls >(sh)", "process substitution '>('"),
        ("(rm -rf /)", "'(' outside quotes"),
        ("ls; f() { rm; }", "'(' outside quotes"),
        ("{ ls; rm -rf /; }", "starts with '{', part of a compound command"),
        ("if ls; then rm -rf /; fi", "starts with 'if'"),
        ("for x in a; do ls; done", "starts with 'for'"),
        ("FOO=1 rm", "starts with an assignment to 'FOO'"),
        ("PATH=/tmp ls", "starts with an assignment to 'PATH'"),
        ("LD_PRELOAD=/tmp/x.so ls", "starts with an assignment to 'LD_PRELOAD'"),
        ("2>&1 PATH=/tmp ls", "starts with an assignment to 'PATH'"),
        ("! PATH=/tmp ls", "starts with an assignment to 'PATH'"),
        ("time LD_PRELOAD=x ls", "starts with an assignment to 'LD_PRELOAD'"),
        ("! { ls; }", "starts with '{'"),
        ("ls $'\\x3b'", "ANSI-C quoting"),
        ("ls \\\n; rm", "line continuation"),
        ('ls "a\\\n"', "line continuation"),
        ("ls 'a", "unterminated single quote (at character 4)"),
        ('ls "a', "unterminated double quote (at character 4)"),
        ("ls \0", "NUL"),
        ("", "the command line is empty"),
        (" ; \n ", "the command line is empty"),
        ("# ls", "the command line is empty"),
    ],
)
def test_refusals_say_what_and_where(command: str, reason: str) -> None:
    assert reason in refused(command)


def test_refusals_tell_how_to_get_the_command_run() -> None:
    assert refused("ls $(x)") == (
        "the command line uses command substitution '$(', which an allowlist cannot vouch "
        "for; it needs approval or full mode"
    )
    assert refused("rm -rf /") == "'rm -rf /' matches no allowlist pattern"


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("ls 'a;b'", ["ls 'a;b'"]),
        ('ls "a;b"', ['ls "a;b"']),
        ("ls 'a$(x)'", ["ls 'a$(x)'"]),
        ("ls 'a`x`|b>c'", ["ls 'a`x`|b>c'"]),
        ("echo \\; rm", ["echo \\; rm"]),
        ("echo a\\&\\&b", ["echo a\\&\\&b"]),
        ("  ls -la  ", ["ls -la"]),
        ("ls;", ["ls"]),
        ("ls ;; pwd", ["ls", "pwd"]),
        ("ls # a comment; rm -rf /", ["ls"]),
        ("ls # it's\nrm -rf / # '", ["ls", "rm -rf /"]),
        ("ls a#b", ["ls a#b"]),
        ("make 2>&1 | tail -n 5", ["make 2>&1", "tail -n 5"]),
        ("ls >&2", ["ls >&2"]),
        ("ls $HOME", ["ls $HOME"]),
        ("echo '{' if", ["echo '{' if"]),
        ("'FOO=1' ls", ["'FOO=1' ls"]),
        ("ls --color=auto", ["ls --color=auto"]),
    ],
)
def test_splits_like_sh(command: str, parts: list[str]) -> None:
    assert simple_commands(command) == parts


def test_a_problem_is_a_value_not_an_exception() -> None:
    assert isinstance(simple_commands("ls `x`"), CommandProblem)


@pytest.mark.parametrize(
    "command", ["ls 'a;b'", 'ls "a;b"', "ls 'a$(x)'", "echo \\; rm", "ls -la", "ls\n", "ls # x"]
)
def test_quoted_and_escaped_metacharacters_are_plain_text(command: str) -> None:
    assert match_command(command, ["ls*", "echo*"]).matched


def test_every_simple_command_needs_a_pattern_and_each_is_reported() -> None:
    match = match_command("git status --short && ls -la | wc -l", ["ls *", "git status*", "wc*"])
    assert match == CommandMatch(
        matched=True,
        pattern="git status*",
        patterns=("git status*", "ls *", "wc*"),
        reason="",
    )


def test_star_matches_spaces_and_the_whole_text_is_matched() -> None:
    assert match_command("git status --short", ["git status*"]).matched
    assert not match_command("git status --short", ["git status"]).matched
    assert not match_command("sudo git status", ["git status*"]).matched


def test_the_first_pattern_that_matches_is_reported() -> None:
    assert match_command("ls -la", ["ls -la", "ls*"]).patterns == ("ls -la",)


def test_a_lone_star_allows_simple_commands_but_not_metacharacters() -> None:
    assert match_command("rm -rf / ; curl x | sh", ["*"]).matched
    assert not match_command("ls $(rm -rf /)", ["*"]).matched
    assert not match_command("ls > /etc/passwd", ["*"]).matched


def test_no_patterns_match_nothing() -> None:
    assert refused("ls", []) == "'ls' matches no allowlist pattern"


@pytest.mark.parametrize(("n", "word"), [(3, "3rd"), (4, "4th"), (11, "11th"), (22, "22nd")])
def test_ordinals(n: int, word: str) -> None:
    command = "; ".join(["ls"] * (n - 1) + ["rm"])
    assert f"(the {word} command of the line)" in refused(command)


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("", "cannot be empty"),
        ("   ", "cannot be empty"),
        ("ls\nrm", "newline or NUL"),
        ("ls\0", "newline or NUL"),
        (" ls", "starts or ends with a blank"),
        ("ls *\t", "starts or ends with a blank"),
    ],
)
def test_invalid_patterns(pattern: str, problem: str) -> None:
    found = validate_pattern(pattern)
    assert found is not None
    assert problem in found


@pytest.mark.parametrize("pattern", ["*", "ls", "ls *", "git status*", "[a-z]*", "echo 'a b'"])
def test_valid_patterns(pattern: str) -> None:
    assert validate_pattern(pattern) is None


# Properties. A simple command built from words and quoted strings (no
# backslash or `#`, which could escape or comment out what follows it).
_plain = st.text(alphabet="abcxyz019 -._/=,:@%+~", min_size=1, max_size=8)
_literal = st.characters(exclude_characters="\0'")
_single_quoted = st.text(alphabet=_literal, max_size=8).map(lambda s: f"'{s}'")
_double_quoted = st.text(alphabet=st.characters(exclude_characters='\0"\\$`'), max_size=8).map(
    lambda s: f'"{s}"'
)
_chunks = st.lists(st.one_of(_plain, _single_quoted, _double_quoted), max_size=6)
ls_commands = _chunks.map(lambda chunks: "ls " + "".join(chunks))
shellish = st.one_of(
    st.text(max_size=20),
    st.lists(
        st.sampled_from(["ls", "rm", " ", ";", "&", "|", "\n", "'", '"', "\\", "$(", "`", "#"]),
        max_size=10,
    ).map("".join),
)


@given(ls_commands)
def test_allowed_commands_stay_allowed(command: str) -> None:
    assert match_command(command, LS).patterns == ("ls*",)


@given(ls_commands, st.sampled_from(SEPARATORS), shellish)
def test_what_follows_a_separator_must_match_on_its_own(command: str, sep: str, rest: str) -> None:
    if match_command(command + sep + rest, LS).matched:
        alone = simple_commands(rest)
        assert alone == [] or match_command(rest, LS).matched


@given(
    st.lists(st.one_of(_plain, _single_quoted, _double_quoted, st.just("\\;")), max_size=6),
    st.integers(min_value=0),
    st.sampled_from(["$(rm -rf /)", "`rm -rf /`", "$((1))", "${x}"]),
)
def test_substitutions_outside_single_quotes_never_match(
    chunks: list[str], where: int, substitution: str
) -> None:
    # Anywhere but inside a single-quoted chunk: between chunks, or inside the
    # others (even right after a backslash or inside double quotes).
    chunks = ["ls ", *chunks]
    index = where % len(chunks)
    chunk = chunks[index]
    if chunk.startswith("'"):
        chunks.insert(index, substitution)
    else:
        at = where % (len(chunk) + 1)
        if chunk.startswith('"'):
            at = min(max(at, 1), len(chunk) - 1)
        chunks[index] = chunk[:at] + substitution + chunk[at:]
    command = "".join(chunks)
    assert not match_command(command, LS).matched
    assert not match_command(command, ["*"]).matched


@given(st.text(alphabet=_literal, max_size=20))
def test_anything_single_quoted_is_one_literal_argument(text: str) -> None:
    command = f"ls '{text}'"
    assert simple_commands(command) == [command.strip(" \t\n")]


@given(shellish)
def test_every_reported_part_matched_its_pattern(command: str) -> None:
    match = match_command(command, ["ls*", "rm *"])
    parts = simple_commands(command)
    if match.matched:
        assert isinstance(parts, list)
        assert len(parts) == len(match.patterns)
        assert all(fnmatch.fnmatchcase(p, q) for p, q in zip(parts, match.patterns, strict=True))


# What sh runs is what the allowlist saw: lines that only `echo` may run are
# run by the real /bin/sh with tracing on, and no other command may appear.
_TOKENS = [
    *["echo ", "echo", "rm", "x", "1", "2", "=", "!", "if", "then", "fi", "do", "done"],
    *[" ", " #", "#", ";", "&", "&&", "|", "\n", "'", '"', "\\", "\\\n", "$", "$x", "$("],
    *["${", "$'", "(", ")", "`", "{ ", "}", ">", "<", "2>&1", ">&2"],
]


def _lines_only_echo_may_run(count: int) -> list[str]:
    chooser = random.Random(20240501)
    lines: list[str] = []
    while len(lines) < count:
        line = "".join(chooser.choice(_TOKENS) for _ in range(chooser.randint(1, 12)))
        if match_command(line, ["echo", "echo *"]).matched:
            lines.append(line)
    return lines


def test_sh_runs_only_the_commands_that_matched(tmp_path: Path) -> None:
    for line in _lines_only_echo_may_run(300):
        traced = subprocess.run(
            ["/bin/sh", "-xc", line],
            cwd=tmp_path,
            env={"PATH": "", "PS4": "@@ "},
            capture_output=True,
            text=True,
            timeout=10,
        )
        ran = [t.lstrip("@ ") for t in traced.stderr.splitlines() if t.startswith("@@ ")]
        assert all(r.startswith("echo") for r in ran), (line, ran)
