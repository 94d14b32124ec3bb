"""Tiers 1 and 2 over text streamed into one file, in any chunking.

Findings only become certain at line ends (tier 1) and statement ends (tier 2), and both are decided from the
completed lines alone, so the findings of a stream do not depend on how it was cut into chunks: the property the
tests check against ``scan_text``.
"""

from __future__ import annotations

import functools

from spark_ide.guard.findings import CodeBlock, Finding
from spark_ide.guard.languages import Language, language_for
from spark_ide.guard.prefilter import HINT_MARK, KEY_MARK, Words
from spark_ide.guard.secret_rules import SECRET_WORDS, secret_findings


class FileScanner:
    """Tiers 1-2 over text streamed into one file, in order."""

    def __init__(self, path: str, *, first_line: int = 1, language: str | None = None) -> None:
        self.path = path
        self.language = language_for(path, language)
        self._python = self.language.is_python
        self._statements = self.language.statements(path) if self.language.statements is not None else None
        self._next_line = first_line
        # The line not yet ended, in pieces: the latest chunks as they came, and every ``_JOIN`` of them joined into
        # one (a megabyte-long line streamed 4 characters at a time is then ~4,000 strings, not 250,000).
        self._partial: list[str] = []
        self._loose = 0  # how many of ``_partial``'s last pieces are chunks not joined yet
        self._reported: set[tuple[str, str, int]] = set()
        self._finished = False
        self._words = _words_for(self.language)

    def feed(self, text: str) -> list[Finding]:
        """The findings that became certain with this chunk (each finding once per scanner)."""
        if self._finished:
            raise ValueError("this scanner's stream has finished")
        end = text.rfind("\n")
        if end < 0:  # most chunks: a piece of a line, kept (nothing is certain before the line ends)
            if text:
                self._partial.append(text)
                self._loose += 1
                if self._loose == _JOIN:
                    self._partial[-_JOIN:] = ["".join(self._partial[-_JOIN:])]
                    self._loose = 0
            return []
        done = text[:end]
        if self._partial:
            self._partial.append(done)
            done = "".join(self._partial)  # once per line
        rest = text[end + 1 :]
        self._partial = [rest] if rest else []
        self._loose = len(self._partial)
        found = self._lines(done)
        return self._fresh(found) if found else found

    def finish(self) -> list[Finding]:
        """The stream ended: the last partial line and statement are checked too. Calling it again returns []."""
        if self._finished:
            return []
        self._finished = True
        found: list[Finding] = []
        if self._partial:
            found.extend(self._lines("".join(self._partial)))
            self._partial = []
            self._loose = 0
        if self._statements is not None:
            found.extend(self._statements.finish())
        return self._fresh(found)

    def completed_blocks(self) -> list[CodeBlock]:
        """Top-level blocks completed and not yet taken, for tier 3 (each returned once); none outside Python."""
        return self._statements.take_blocks() if self._statements is not None else []

    def _lines(self, text: str) -> list[Finding]:
        """Completed lines, ``text`` holding one or more joined by "\n": what they complete, line by line (a
        line's secret, then its line rules' findings, then those of the statements it completes)."""
        if "\r" in text:
            text = "\n".join(line[:-1] if line.endswith("\r") else line for line in text.split("\n"))
        first = self._next_line
        marked = self._words.lines(text)  # the few lines a secret pattern or a statement rule could care about
        lines: list[str] | None = None
        tagged: list[tuple[int, Finding]] = []  # (index of the line, finding), in the order above per line
        for index, marks in sorted(marked.items()) if marked else ():
            if marks & _SECRET_MARKS:
                lines = lines or text.split("\n")
                tagged += [
                    (index, finding) for finding in secret_findings(
                        self.path, lines[index], first + index, python=self._python,
                        config_style=self.language.config_style, marks=marks,
                    )
                ]
        if self.language.line_rules:
            lines = lines or text.split("\n")
            for index, line in enumerate(lines):
                for rule in self.language.line_rules:
                    tagged += [(index, finding) for finding in rule(self.path, line, first + index)]
        statements = self._statements.lines(text, first, marked) if self._statements is not None else []
        self._next_line = first + (len(lines) if lines is not None else text.count("\n") + 1)
        if tagged:
            statements = tagged + statements
            statements.sort(key=lambda pair: pair[0])  # stable: per line, secrets, line rules, statements
        elif not statements:
            return []  # most chunks
        return [finding for _, finding in statements]

    def _fresh(self, found: list[Finding]) -> list[Finding]:
        fresh = []
        for finding in found:
            if finding.key not in self._reported:
                self._reported.add(finding.key)
                fresh.append(finding)
        return fresh


_SECRET_MARKS = KEY_MARK | HINT_MARK
_JOIN = 64  # the chunks of an unfinished line kept apart at most: then joined (each chunk is copied once more)


@functools.cache
def _words_for(language: Language) -> Words:
    """Tier 1's words and the language's, looked for in one pass over each chunk."""
    return SECRET_WORDS if language.words is None else SECRET_WORDS | language.words


def scan_text(path: str, text: str, *, first_line: int = 1, language: str | None = None) -> list[Finding]:
    """Tiers 1-2 over a whole text: exactly what a ``FileScanner`` fed it and then finished reports."""
    scanner = FileScanner(path, first_line=first_line, language=language)
    return scanner.feed(text) + scanner.finish()
