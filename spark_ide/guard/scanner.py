"""Tiers 1 and 2 over text streamed into one file, in any chunking.

Findings only become certain at line ends (tier 1) and statement ends (tier 2), and both are decided from the
completed lines alone, so the findings of a stream do not depend on how it was cut into chunks: the property the
tests check against ``scan_text``.
"""

from __future__ import annotations

from spark_ide.guard.findings import CodeBlock, Finding
from spark_ide.guard.languages import language_for
from spark_ide.guard.secret_rules import secret_findings


class FileScanner:
    """Tiers 1-2 over text streamed into one file, in order."""

    def __init__(self, path: str, *, first_line: int = 1, language: str | None = None) -> None:
        self.path = path
        self.language = language_for(path, language)
        self._python = self.language.is_python
        self._statements = self.language.statements(path) if self.language.statements is not None else None
        self._next_line = first_line
        self._partial: list[str] = []  # the pieces of the line not yet ended
        self._reported: set[tuple[str, str, int]] = set()
        self._finished = False

    def feed(self, text: str) -> list[Finding]:
        """The findings that became certain with this chunk (each finding once per scanner)."""
        if self._finished:
            raise ValueError("this scanner's stream has finished")
        if "\n" not in text:
            if text:
                self._partial.append(text)
            return []
        lines = text.split("\n")
        lines[0] = "".join((*self._partial, lines[0]))
        self._partial = [lines[-1]] if lines[-1] else []
        found: list[Finding] = []
        for line in lines[:-1]:
            found.extend(self._line(line))
        return self._fresh(found)

    def finish(self) -> list[Finding]:
        """The stream ended: the last partial line and statement are checked too. Calling it again returns []."""
        if self._finished:
            return []
        self._finished = True
        found: list[Finding] = []
        if self._partial:
            found.extend(self._line("".join(self._partial)))
            self._partial = []
        if self._statements is not None:
            found.extend(self._statements.finish())
        return self._fresh(found)

    def completed_blocks(self) -> list[CodeBlock]:
        """Top-level blocks completed and not yet taken, for tier 3 (each returned once); none outside Python."""
        return self._statements.take_blocks() if self._statements is not None else []

    def _line(self, line: str) -> list[Finding]:
        if line.endswith("\r"):
            line = line[:-1]
        number = self._next_line
        self._next_line += 1
        found = secret_findings(self.path, line, number, python=self._python,
                                config_style=self.language.config_style)
        for rule in self.language.line_rules:
            found.extend(rule(self.path, line, number))
        if self._statements is not None:
            found.extend(self._statements.line(line, number))
        return found

    def _fresh(self, found: list[Finding]) -> list[Finding]:
        fresh = []
        for finding in found:
            if finding.key not in self._reported:
                self._reported.add(finding.key)
                fresh.append(finding)
        return fresh


def scan_text(path: str, text: str, *, first_line: int = 1, language: str | None = None) -> list[Finding]:
    """Tiers 1-2 over a whole text: exactly what a ``FileScanner`` fed it and then finished reports."""
    scanner = FileScanner(path, first_line=first_line, language=language)
    return scanner.feed(text) + scanner.finish()
