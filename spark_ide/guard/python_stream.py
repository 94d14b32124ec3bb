"""Tier 2 for a streamed Python file: statements checked as they complete, top-level blocks cut for tier 3.

Each logical line is parsed on its own (its first line's indentation stripped), so statements deep inside a function
are checked the moment they end, and a stream that starts in the middle of a file (an edit block rewriting lines
inside a method) needs no surrounding code. A statement is only parsed if a cheap substring test says a rule could
fire on it; most lines never reach ``ast.parse``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from spark_ide.guard.findings import CodeBlock, Finding
from spark_ide.guard.python_context import STATEMENT_MARK
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
        self._hot = False  # a line of the open statement holds one of ``STATEMENT_WORDS``

    def lines(self, text: str, number: int, marked: Mapping[int, int]) -> list[tuple[int, Finding]]:
        """Completed lines (``text``: one or more, joined by "\n") from file line ``number``, ``marked`` those
        holding one of ``STATEMENT_WORDS`` (``STATEMENT_MARK``): the findings of the statements they complete, each
        with the index of the line that completed it."""
        if "\r" in text:
            text = text.replace("\r", " ")  # the parser takes a lone CR for a line break: keep line numbers exact
        hot = {index for index, marks in marked.items() if marks & STATEMENT_MARK} if marked else ()
        found: list[tuple[int, Finding]] = []
        logical, context = self._lines, self._rules.context
        learned = context.learned_names
        block, passes = self._block, logical.passes
        for index, line in enumerate(text.split("\n")):
            if not logical.open and line and line[0] not in " \t\f#":  # a logical line starts at column 0
                self._track_block(line, number + index)
                block = self._block
            if not block:
                self._block_start = number + index
            block.append(line)
            if hot and index in hot:
                self._hot = True
            elif not (self._hot or learned) and passes(line):
                continue  # most lines: whole statements no rule reads (or blank, or comments), not even pushed
            if logical.push(line, number + index):
                # Most statements hold none of the words and no name the file taught the rules: nothing to check.
                if self._hot or learned:
                    for finding in self._check(logical.take()):
                        found.append((index, finding))
                    learned = context.learned_names  # what the statement taught counts from the next one
                else:
                    logical.drop()
        return found

    def finish(self) -> list[Finding]:
        statement = self._lines.finish()
        found = [] if statement is None else self._check(statement)
        self._close_block()
        return found

    def take_blocks(self) -> list[CodeBlock]:
        if not self._blocks:
            return []
        blocks, self._blocks = self._blocks, []
        return blocks

    def _check(self, statement: Statement) -> list[Finding]:
        hot, self._hot = self._hot, False
        context = self._rules.context
        if hot:
            if not context.wants(statement.text):
                return []
        elif not (context.learned_names and context.knows_a_name_in(statement.text)):  # what ``wants`` then asks
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
