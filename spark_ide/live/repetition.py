"""Degenerate repetition: a model looping on the same line or the same few lines.

Small models fall into loops ("Turn 2a3f… no edit blocks." forty times over). The guard is
fed the answer as it streams and says when the tail has become a loop, so the Pilot stops
the turn instead of letting it run for a minute. Code repeats legitimately (blank lines,
closing braces, a table of rows that differ in their numbers), so a loop needs substance:

* across lines: a cycle of one to ``MAX_PERIOD`` identical lines (blanks at either end
  aside) whose text is at least ``MIN_CYCLE_CHARS`` long, repeated ``MIN_REPEATS`` times in
  a row;
* inside one line at least ``LONG_LINE`` characters long: its end is a fragment of
  ``MIN_FRAGMENT`` to ``MAX_FRAGMENT`` characters repeated ``MIN_REPEATS`` times in a row,
  over at least ``MIN_INLINE_SPAN`` characters (so a short run of equal items in a data
  literal, ``0, 0, 0, …`` or base64's ``AAAA…``, is not taken for a loop; a model that loops
  goes on, and is caught a few hundred characters later).

Every delta costs the same whatever the length of the line it continues (a model writes
paragraphs, minified JSON and data literals as one line of 10^4 to 10^6 characters): the
line is kept in pieces (``OpenLine``) with its last ``WINDOW`` characters at hand, and the
inline check looks for the line's last ``MIN_FRAGMENT`` characters one period back (one
``rfind`` over ``MAX_FRAGMENT`` characters) before it compares anything; only the periods
found there are compared (``repeats_at_end``), at most ``MAX_FRAGMENT - MIN_FRAGMENT + 1``
per delta, each over at most ``WINDOW`` characters.
"""

from __future__ import annotations

from spark_ide.editing.lines import OpenLine

MAX_PERIOD = 8  # lines in one cycle, at most
MIN_REPEATS = 6  # cycles in a row that make a loop
MIN_CYCLE_CHARS = 12  # a cycle this short (a brace, "pass") is not a loop
LONG_LINE = 600  # a line this long without a newline is checked for a loop inside it
MIN_FRAGMENT = 8  # the shortest fragment that loops inside a line
MAX_FRAGMENT = 120  # ... and the longest
MIN_INLINE_SPAN = 400  # characters a loop inside a line covers, at least
WINDOW = max(MAX_FRAGMENT * MIN_REPEATS, MIN_INLINE_SPAN)  # the most an inline check reads
KEPT_LINES = MAX_PERIOD * MIN_REPEATS  # the most lines a cycle check reads


def inline_span(period: int) -> int:
    """The characters at the end of a line that must repeat with ``period`` to be a loop."""
    return max(period * MIN_REPEATS, MIN_INLINE_SPAN)


def repeats_at_end(tail: str, period: int) -> bool:
    """Whether ``tail`` ends with a loop of ``period`` characters: its last ``inline_span``
    characters equal themselves shifted by ``period`` (one C-level comparison)."""
    span = inline_span(period)
    if len(tail) < span:
        return False
    return tail[len(tail) - span + period :] == tail[len(tail) - span : len(tail) - period]


class RepetitionGuard:
    def __init__(self) -> None:
        self._lines: list[str] = []  # the complete lines, trimmed, newest last (bounded)
        self._line = OpenLine(tail_chars=WINDOW)  # the current line

    def feed(self, text: str) -> bool:
        """Take more of the answer; True once the answer has become a loop."""
        lines = self._lines
        for line in self._line.feed(text):  # most deltas end no line
            lines.append(line.strip())
            if len(lines) > 2 * KEPT_LINES:  # trimmed now and then, not at every line
                del lines[:-KEPT_LINES]
            if self._looping():
                return True
        return self._line.length >= LONG_LINE and self._inline_loop()

    def _inline_loop(self) -> bool:
        tail = self._line.tail(WINDOW)
        end = len(tail)
        probe = tail[end - MIN_FRAGMENT :]
        # A loop of period p puts the probe p characters back too: look only where it is.
        lowest = max(0, end - MIN_FRAGMENT - MAX_FRAGMENT)
        found = tail.rfind(probe, lowest, end - MIN_FRAGMENT)  # the nearest: the shortest period
        while found >= lowest:
            if repeats_at_end(tail, end - MIN_FRAGMENT - found):
                return True
            found = tail.rfind(probe, lowest, found + MIN_FRAGMENT - 1)
        return False

    def _looping(self) -> bool:
        lines = self._lines
        last = lines[-1]
        # A cycle of any period repeats the last line within the MAX_PERIOD lines before it:
        # most lines of most answers are found in none of them (one C-level scan, no loop).
        if last not in lines[-MAX_PERIOD - 1 : -1]:
            return False
        for period in range(1, MAX_PERIOD + 1):
            span = period * MIN_REPEATS
            if len(lines) < span:
                break
            if lines[-1 - period] != last:
                continue  # most lines of most answers: one comparison per period, nothing built
            cycle = lines[-period:]
            if sum(map(len, cycle)) < MIN_CYCLE_CHARS:
                continue
            if all(lines[-span + i] == cycle[i % period] for i in range(span)):
                return True
        return False
