"""Degenerate repetition: a model looping on the same line or the same few lines.

Small models fall into loops ("Turn 2a3f… no edit blocks." forty times over). The guard is
fed the answer as it streams and says when the tail has become a loop, so the Pilot stops
the turn instead of letting it run for a minute. Code repeats legitimately (blank lines,
closing braces, a table of rows that differ in their numbers), so a loop needs substance:
a cycle of one to ``MAX_PERIOD`` identical lines (blanks at either end aside) whose text is
at least ``MIN_CYCLE_CHARS`` long, repeated ``MIN_REPEATS`` times in a row; or, within one
overlong line, a fragment repeated ``MIN_REPEATS`` times at its end.
"""

from __future__ import annotations

import re

MAX_PERIOD = 8  # lines in one cycle, at most
MIN_REPEATS = 6  # cycles in a row that make a loop
MIN_CYCLE_CHARS = 12  # a cycle this short (a brace, "pass") is not a loop
LONG_LINE = 600  # a line this long without a newline is checked for a loop inside it
_INLINE = re.compile(r"(.{8,120}?)\1{" + str(MIN_REPEATS - 1) + r",}$", re.DOTALL)


class RepetitionGuard:
    def __init__(self) -> None:
        self._lines: list[str] = []  # the complete lines, trimmed, newest last (bounded)
        self._partial = ""

    def feed(self, text: str) -> bool:
        """Take more of the answer; True once the answer has become a loop."""
        self._partial += text
        if "\n" not in text:  # most deltas: the line goes on, nothing to split (it ran per delta)
            return self._inline_loop()
        *complete, self._partial = self._partial.split("\n")
        if complete:
            self._lines.extend(line.strip() for line in complete)
            del self._lines[: -MAX_PERIOD * MIN_REPEATS]
            if self._looping():
                return True
        return self._inline_loop()

    def _inline_loop(self) -> bool:
        return len(self._partial) >= LONG_LINE and _INLINE.search(self._partial[-LONG_LINE:]) is not None

    def _looping(self) -> bool:
        lines = self._lines
        for period in range(1, MAX_PERIOD + 1):
            span = period * MIN_REPEATS
            if len(lines) < span:
                break
            cycle = lines[-period:]
            if len("".join(cycle)) < MIN_CYCLE_CHARS:
                continue
            if all(lines[-span + i] == cycle[i % period] for i in range(span)):
                return True
        return False
