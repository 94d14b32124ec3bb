"""Tier 2 for a streamed Python file: statements checked as they complete, top-level blocks cut for tier 3.

Each logical line is parsed on its own (its first line's indentation stripped), so statements deep inside a function
are checked the moment they end, and a stream that starts in the middle of a file (an edit block rewriting lines
inside a method) needs no surrounding code. A statement is only parsed if a cheap substring test says a rule could
fire on it; most lines never reach ``ast.parse``.
"""

from __future__ import annotations

import re

from spark_ide.guard.findings import CodeBlock, Finding
from spark_ide.guard.python_lexer import LogicalLines, Statement, parse_statement
from spark_ide.guard.python_rules import StatementRules

# A line at column 0 starting with one of these continues the compound statement above it.
_CONTINUATION = re.compile(r"(?:elif|else|except|finally)\b")


class PythonStatements:
    """The Python ``StatementChecker``: one per streamed file."""

    def __init__(self, path: str) -> None:
        self._lines = LogicalLines()
        self._rules = StatementRules(path)
        self._block: list[str] = []
        self._block_start = 0
        self._block_has_code = False
        self._after_decorator = False
        self._blocks: list[CodeBlock] = []

    def line(self, text: str, number: int) -> list[Finding]:
        if "\r" in text:
            text = text.replace("\r", " ")  # the parser takes a lone CR for a line break: keep line numbers exact
        if not self._lines.open:
            self._track_block(text, number)
        if not self._block:
            self._block_start = number
        self._block.append(text)
        statement = self._lines.push(text, number)
        return [] if statement is None else self._check(statement)

    def finish(self) -> list[Finding]:
        statement = self._lines.finish()
        found = [] if statement is None else self._check(statement)
        self._close_block()
        return found

    def take_blocks(self) -> list[CodeBlock]:
        blocks, self._blocks = self._blocks, []
        return blocks

    def _check(self, statement: Statement) -> list[Finding]:
        text = statement.text
        if not self._rules.context.wants(text):
            return []
        parsed = parse_statement(statement)
        if parsed is None:
            return []
        tree, offset = parsed
        try:
            found = self._rules.check(tree, statement.first_line, offset)
        except RecursionError:
            return []  # a tree deep enough to parse yet too deep to walk: no finding, never a failed stream
        # One statement may report one rule twice on a line (a literal and a built command): most severe first, so
        # the scanner's once-per-key filter keeps that one.
        return sorted(found, key=lambda f: (f.line, -f.severity.rank, f.rule))

    def _track_block(self, text: str, number: int) -> None:
        """A logical line starts: at column 0 it may end the block above and start the next one."""
        if not text or text[0] in " \t\f#" or not text.strip():
            return
        continues = self._after_decorator or _CONTINUATION.match(text) is not None
        self._after_decorator = text.startswith("@")
        if self._block_has_code and not continues:
            self._close_block()
        self._block_has_code = True

    def _close_block(self) -> None:
        if self._block_has_code:
            self._blocks.append(CodeBlock(self._block_start, "\n".join(self._block)))
        self._block = []
        self._block_has_code = False
