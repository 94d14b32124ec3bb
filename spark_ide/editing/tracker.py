"""Narrow the candidate places of an `old_text` line by line while it streams.

This drives the highlight the person sees before anything changes; the authoritative
decision is `locate()` once `</old_text>` arrives. Exact line matches are followed first;
when none survive, whitespace-insensitive ones; after that the tracker gives up and the
fuzzy pass at the end decides.
"""

from __future__ import annotations

from enum import Enum, auto

from spark_ide.editing.lines import OpenLine, normalize, split_lines
from spark_ide.editing.locator import (
    REPORTED_CANDIDATES,
    exact_line_starts,
    line_numbers,
    lines_at,
    whitespace_starts,
)

# A first line found more often than this (blank lines, `}`) says little; the tracker
# waits for the next line and searches for both together instead of filtering hundreds.
COMMON_LINE_LIMIT = 64


class _Mode(Enum):
    EXACT = auto()
    WHITESPACE = auto()
    LOST = auto()


class CandidateTracker:
    def __init__(self, text: str) -> None:
        self._text = text
        self._line = OpenLine()
        self._seen: list[str] = []
        self._mode = _Mode.EXACT
        # Exact candidates as (region start, start of the line after the lines seen);
        # None while the lines seen so far are too common to be worth following.
        self._exact: list[tuple[int, int]] | None = None
        self._loose: list[int] = []  # first line indices
        self._doc_norm: list[str] | None = None
        self._numbers: dict[int, int] = {}

    @property
    def lines_seen(self) -> int:
        return len(self._seen)

    def feed(self, chunk: str) -> bool:
        """Take more old_text; True when a line completed (the candidates may differ)."""
        complete = self._line.feed(chunk)
        for line in complete:
            self._narrow(line)
        return bool(complete)

    def count(self) -> int | None:
        """How many places are still possible (None: too many to say yet)."""
        if self._mode is _Mode.EXACT:
            return None if self._exact is None else len(self._exact)
        return len(self._loose) if self._mode is _Mode.WHITESPACE else 0

    def candidates(self) -> list[int]:
        """1-based first lines of (up to a few) surviving candidates."""
        if self._mode is _Mode.WHITESPACE:
            return [start + 1 for start in self._loose[:REPORTED_CANDIDATES]]
        if self._mode is _Mode.LOST or self._exact is None:
            return []
        starts = [start for start, _ in self._exact[:REPORTED_CANDIDATES]]
        unknown = [start for start in starts if start not in self._numbers]
        if unknown:
            # Survivors keep their place, so each start is counted once per block.
            self._numbers.update(zip(unknown, line_numbers(self._text, unknown), strict=True))
        return [self._numbers[start] + 1 for start in starts]

    def _narrow(self, line: str) -> None:
        self._seen.append(line)
        if self._mode is _Mode.EXACT:
            self._narrow_exact(line)
            if self._exact is not None and not self._exact:
                self._mode = _Mode.WHITESPACE
                self._loose = whitespace_starts(
                    self._normalized_doc(), [normalize(seen) for seen in self._seen]
                )
        elif self._mode is _Mode.WHITESPACE:
            doc_norm = self._normalized_doc()
            row = len(self._seen) - 1
            wanted = normalize(line)
            self._loose = [
                start
                for start in self._loose
                if start + row < len(doc_norm) and doc_norm[start + row] == wanted
            ]
        if self._mode is _Mode.WHITESPACE and not self._loose:
            self._mode = _Mode.LOST

    def _narrow_exact(self, line: str) -> None:
        if self._exact is None:
            needle = "".join(seen + "\n" for seen in self._seen)
            starts = exact_line_starts(self._text, needle, COMMON_LINE_LIMIT + 1)
            if len(starts) <= COMMON_LINE_LIMIT:
                self._exact = [(start, start + len(needle)) for start in starts]
            return
        needle = line + "\n"
        text = self._text
        self._exact = [
            (start, after + len(needle))
            for start, after in self._exact
            if lines_at(text, needle, after)
        ]

    def _normalized_doc(self) -> list[str]:
        if self._doc_norm is None:
            self._doc_norm = [normalize(line) for line in split_lines(self._text)]
        return self._doc_norm
