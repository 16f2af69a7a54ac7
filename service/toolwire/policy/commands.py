"""Which command lines an exec allowlist vouches for.

`exec` runs `/bin/sh -c <line>`, so a pattern can only vouch for what it can
see: the text of each simple command, and nothing that makes sh run, read or
write something else.

Splitting. The line is tokenised the way sh quotes: single quotes (everything
literal), double quotes, backslash escapes. Outside quotes the control
operators `;` `&&` `||` `|` `&` `|&` and newline separate simple commands, and
a `#` starting a word begins a comment up to the newline (it runs nothing and
is not part of the command's text). Empty commands (`ls;`) are dropped.

Matching. Every simple command, in its original text stripped of blanks, must
match some pattern with `fnmatch.fnmatchcase`: `*` matches anything, spaces
included (`git status*` matches `git status --short`); `?` one character;
`[...]` a class. The whole text is matched, so `ls*` also matches `lsblk` and
`ls/../../bin/rm`: prefer `ls` and `ls *`. A pattern allowing a command that
runs its arguments (`sh *`, `env *`, `xargs *`, `find *`) allows anything.

Refusals. A line is refused whatever the patterns (even `*`, which otherwise
allows every simple command) when it holds something whose effect its text does
not show:
- anywhere outside single quotes, even inside double quotes or after a
  backslash: command substitution `$(` and backticks, arithmetic `$((`,
  parameter expansion `${`, and a backslash-newline (sh joins the lines before
  anything else, so the text would not be what runs);
- outside quotes: redirections (`>` `>>` `<` `>|` `&>` `<>` `<<`; `N>&M` and
  `N<&M` between descriptors are fine), process substitution `<(` `>(`,
  parentheses (subshells, functions, case patterns), ANSI-C quoting `$'` (its
  escapes differ between shells);
- as the first word of a simple command (after `!` or `time`): `{` `}` and
  the words that open or close compound commands (`if`, `for`, `while`, `do`,
  `then`, `fi`, ...), and a variable assignment (`FOO=1 cmd`, `PATH=... cmd`,
  `LD_PRELOAD=... cmd`);
- unterminated quotes, NUL characters, and a line with no command at all.

Plain `$NAME` expansions are allowed: their values come from the server's
minimal environment, and sh never re-parses them into operators.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CommandMatch",
    "CommandProblem",
    "match_command",
    "simple_commands",
    "validate_pattern",
]

_BLANKS = " \t\n"
_NEEDS_APPROVAL = "which an allowlist cannot vouch for; it needs approval or full mode"
_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")
"""Longest first, so `&&` is not read as two `&`."""
_COMPOUND_WORDS = frozenset(
    {"{", "}", "if", "then", "elif", "else", "fi", "case", "esac", "for", "select"}
    | {"while", "until", "do", "done", "function"}
)
_PREFIX_WORDS = frozenset({"!", "time"})
"""Words before the command proper (`! FOO=1 cmd` assigns too)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_DESCRIPTOR_DUP = re.compile(r"[<>]&(\d+|-)(?=[ \t\n;&|]|$)")


@dataclass(frozen=True, slots=True)
class CommandProblem:
    """Why a command line cannot be split into simple commands safely."""

    reason: str


@dataclass(frozen=True, slots=True)
class CommandMatch:
    """The verdict on one command line.

    `patterns` has, for each simple command in order, the pattern that allowed
    it; `pattern` is the first of them (the only one for most lines).
    """

    matched: bool
    pattern: str | None
    patterns: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class _Simple:
    text: str
    first_word: str | None


class _Refused(Exception):
    """Internal: carries a problem out of the scanner."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def validate_pattern(pattern: str) -> str | None:
    """A problem with an allowlist pattern, or None when it can be used."""
    if not pattern.strip():
        return "an allowlist pattern cannot be empty"
    if "\n" in pattern or "\0" in pattern:
        return f"the allowlist pattern {pattern!r} holds a newline or NUL character"
    if pattern != pattern.strip(_BLANKS):
        return (
            f"the allowlist pattern {pattern!r} starts or ends with a blank; commands are "
            "matched without their surrounding blanks, so it would never match"
        )
    return None


def simple_commands(command: str) -> list[str] | CommandProblem:
    """The simple commands of a line, each stripped, or why it cannot be split."""
    try:
        parts = _split(command)
    except _Refused as refused:
        return CommandProblem(refused.reason)
    problem = _first_word_problem(parts)
    if problem is not None:
        return problem
    return [part.text for part in parts]


def match_command(command: str, patterns: Sequence[str]) -> CommandMatch:
    """Whether every simple command of the line matches one of `patterns`."""
    parts = simple_commands(command)
    if isinstance(parts, CommandProblem):
        return _refused(parts.reason)
    if not parts:
        return _refused("the command line is empty")
    allowed: list[str] = []
    for index, part in enumerate(parts):
        pattern = next((p for p in patterns if fnmatch.fnmatchcase(part, p)), None)
        if pattern is None:
            where = f" ({_ordinal(index + 1)} command of the line)" if len(parts) > 1 else ""
            return _refused(f"{part!r}{where} matches no allowlist pattern")
        allowed.append(pattern)
    return CommandMatch(matched=True, pattern=allowed[0], patterns=tuple(allowed), reason="")


def _refused(reason: str) -> CommandMatch:
    return CommandMatch(matched=False, pattern=None, patterns=(), reason=reason)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"the {n}{suffix}"


def _first_word_problem(parts: list[_Simple]) -> CommandProblem | None:
    for index, part in enumerate(parts):
        word = part.first_word
        if word is None:
            continue
        where = f"{part.text!r}" + (
            f" ({_ordinal(index + 1)} command of the line)" if len(parts) > 1 else ""
        )
        if word in _COMPOUND_WORDS:
            return CommandProblem(
                f"{where} starts with {word!r}, part of a compound command; an allowlist "
                "vouches only for simple commands, so it needs approval or full mode"
            )
        assignment = _ASSIGNMENT.match(word)
        if assignment is not None:
            return CommandProblem(
                f"{where} starts with an assignment to {assignment.group().rstrip('+=')!r} (it "
                f"can change what the command runs: PATH, LD_PRELOAD), {_NEEDS_APPROVAL}"
            )
    return None


def _uses(what: str) -> _Refused:
    return _Refused(f"the command line uses {what}, {_NEEDS_APPROVAL}")


def _expansion_at(command: str, i: int) -> _Refused | None:
    """What sh would run or expand from the `$` or backtick at `i`, if anything."""
    if command[i] == "`":
        return _uses("command substitution '`'")
    if command.startswith("$((", i):
        return _uses("arithmetic expansion '$(('")
    if command.startswith("$(", i):
        return _uses("command substitution '$('")
    if command.startswith("${", i):
        return _uses("parameter expansion '${'")
    return None


def _escape_problem(command: str, i: int) -> _Refused | None:
    """Backslash at `i`: escaped expansions are refused too (better safe than
    depend on each shell's escaping rules), and so is a line continuation."""
    if command.startswith("\\\n", i):
        return _uses("a line continuation (backslash-newline; join the lines)")
    if i + 1 < len(command):
        return _expansion_at(command, i + 1)
    return None


def _end_of_double_quote(command: str, i: int) -> int:
    """Index after the double-quoted string opening at `i`."""
    j = i + 1
    while j < len(command):
        c = command[j]
        if c == '"':
            return j + 1
        if c == "\\":
            problem = _escape_problem(command, j)
            if problem is not None:
                raise problem
            j += 2
            continue
        problem = _expansion_at(command, j) if c in "$`" else None
        if problem is not None:
            raise problem
        j += 1
    raise _Refused(f"the command line has an unterminated double quote (at character {i + 1})")


def _redirection_at(command: str, i: int) -> _Refused:
    if command.startswith(("<(", ">("), i):
        return _uses(f"process substitution {command[i : i + 2]!r}")
    if command.startswith("<<", i):
        return _uses("a here-document '<<'")
    operator = re.match(r"&>>?|>>|>\||<>|>&|<&|>|<", command[i:])
    shown = operator.group() if operator is not None else command[i]
    return _uses(f"the redirection {shown!r} (reading or writing a file no pattern names)")


class _Scanner:
    """One pass over a line, collecting its simple commands."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.parts: list[_Simple] = []
        self.start = 0
        self.comment_at: int | None = None
        self.word_start: int | None = None
        self.first_word: str | None = None

    def end_word(self, i: int) -> None:
        if self.word_start is not None and self.first_word is None:
            word = self.command[self.word_start : i]
            self.first_word = None if word in _PREFIX_WORDS else word
        self.word_start = None

    def end_command(self, i: int, after: int) -> None:
        self.end_word(i)
        end = i if self.comment_at is None else self.comment_at
        text = self.command[self.start : end].strip(_BLANKS)
        if text:
            self.parts.append(_Simple(text, self.first_word))
        self.start, self.comment_at, self.first_word = after, None, None

    def in_word(self, i: int) -> None:
        if self.word_start is None:
            self.word_start = i

    def scan(self) -> list[_Simple]:
        command, i = self.command, 0
        while i < len(command):
            i = self.step(i)
        self.end_command(len(command), len(command))
        return self.parts

    def step(self, i: int) -> int:
        command, c = self.command, self.command[i]
        if c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise _Refused(
                    f"the command line has an unterminated single quote (at character {i + 1})"
                )
            self.in_word(i)
            return end + 1
        if c == '"':
            self.in_word(i)
            return _end_of_double_quote(command, i)
        if c == "\\":
            problem = _escape_problem(command, i)
            if problem is not None:
                raise problem
            self.in_word(i)
            return i + 2
        if c in "$`":
            problem = _expansion_at(command, i)
            if problem is None and command.startswith("$'", i):
                problem = _uses('ANSI-C quoting "$\'"')
            if problem is not None:
                raise problem
            self.in_word(i)
            return i + 1
        if c in " \t":
            self.end_word(i)
            return i + 1
        if c == "#" and self.word_start is None:
            newline = command.find("\n", i)
            if self.comment_at is None:
                self.comment_at = i
            return len(command) if newline < 0 else newline
        if c == "&" and command.startswith("&>", i):
            raise _redirection_at(command, i)
        separator = next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if separator is not None:
            self.end_command(i, i + len(separator))
            return i + len(separator)
        if c in "<>":
            return self.descriptor_dup(i)
        if c in "()":
            raise _uses(f"{c!r} outside quotes (a subshell, function or case pattern)")
        self.in_word(i)
        return i + 1

    def descriptor_dup(self, i: int) -> int:
        """`N>&M`, `N<&M`, `>&-`: only between descriptors, no file involved."""
        dup = _DESCRIPTOR_DUP.match(self.command, i)
        if dup is None:
            raise _redirection_at(self.command, i)
        word = self.command[self.word_start : i] if self.word_start is not None else ""
        if word.isdigit():
            self.word_start = None  # the descriptor number is no word of the command
        else:
            self.end_word(i)
        return dup.end()


def _split(command: str) -> list[_Simple]:
    if "\0" in command:
        raise _Refused("the command line holds a NUL character")
    return _Scanner(command).scan()
