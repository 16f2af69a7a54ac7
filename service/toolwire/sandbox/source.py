"""The user's module: the stubs and the code wrapped in a default-exported function,
and the way back from its line numbers to the code's own.

`user.ts` is

    <stubs>
    export default async function __toolwire_main__() {
    <code>
    }

so top-level `return` and `await` work in the code, and a line of the code is
its line in the file minus the lines before it. Messages from Deno (type-check
diagnostics, stack traces, syntax errors) name places as `file:///…/user.ts:L:C`;
`Source.relocate` rewrites those as `line N:C` of the code.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

__all__ = ["CALL_TOOL_DECLARATION", "MAIN_FUNCTION", "Source", "compose"]

MAIN_FUNCTION = "__toolwire_main__"
CALL_TOOL_DECLARATION = (
    "declare function __callTool__(name: string, params: Record<string, unknown>)"
    ": Promise<unknown>;\n"
)
# No return type: `Promise<unknown>` would make TypeScript insist on a `return`.
_WRAPPER = f"export default async function {MAIN_FUNCTION}() {{\n"
_LOCATION = re.compile(r"(?P<url>file:///[^\s:()'\"`]+):(?P<line>\d+)(?::(?P<col>\d+))?")
_GUTTER = re.compile(r"(?m)^(?P<indent> *)(?P<line>\d+) \| ")


@dataclass(frozen=True)
class Source:
    text: str
    """The whole module."""
    prefix_lines: int
    """Lines before the code's first line (the stubs and the wrapper)."""
    code_lines: int
    digest: str = field(default="")
    """SHA-256 of `text`: the type-check cache key."""

    def where(self, line: int) -> str:
        """A place in the module, in the code's terms."""
        if line <= self.prefix_lines - 1:
            return "in the tool stubs"
        if line == self.prefix_lines:
            return "at the start of the code"
        user_line = line - self.prefix_lines
        if user_line > self.code_lines:
            return "at the end of the code"
        return f"line {user_line}"

    def code_line(self, line: int) -> int | None:
        """The code's own line number for a line of the module, if it is one."""
        user_line = line - self.prefix_lines
        return user_line if 1 <= user_line <= self.code_lines else None

    def relocate(self, text: str, module_url: str) -> str:
        """Rewrite `<module_url>:L:C` locations in `text` as places in the code."""

        def replace(match: re.Match[str]) -> str:
            if match["url"] != module_url:
                return match[0]
            line = int(match["line"])
            user_line = self.code_line(line)
            if user_line is None:
                return self.where(line)
            return f"line {user_line}:{match['col']}" if match["col"] else f"line {user_line}"

        if module_url not in text:
            return text

        def renumber(match: re.Match[str]) -> str:
            # A source excerpt in Deno's `12 | code` form: the module's line numbers.
            line = self.code_line(int(match["line"]))
            if line is None:
                return match[0]
            width = len(match["indent"]) + len(match["line"])
            return f"{line:>{width}} | "

        return _LOCATION.sub(replace, _GUTTER.sub(renumber, text))


def compose(code: str, stubs: str) -> Source:
    """The module for `code` with `stubs` before it."""
    if stubs and not stubs.endswith("\n"):
        stubs += "\n"
    if "__callTool__" not in stubs:
        # No tools granted: the code may still name `__callTool__` (the bridge defines it).
        stubs = CALL_TOOL_DECLARATION + stubs
    if not code.endswith("\n"):
        code += "\n"
    text = f"{stubs}{_WRAPPER}{code}}}\n"
    prefix_lines = stubs.count("\n") + 1
    return Source(
        text=text,
        prefix_lines=prefix_lines,
        code_lines=code.count("\n"),
        digest=hashlib.sha256(text.encode()).hexdigest(),
    )
