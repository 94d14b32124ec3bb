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
per check, each over at most ``WINDOW`` characters. A long line is checked once it has grown
``CHECK_EVERY`` characters since its last check, not at every delta: a loop goes on once it
has started, so it is caught at most that many characters later, and a line that does not
loop costs a delta little more than a short line's.
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
CHECK_EVERY = 32  # characters a long line grows between two inline checks


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
        self._due = LONG_LINE  # the current line's length at its next inline check

    def feed(self, text: str) -> bool:
        """Take more of the answer; True once the answer has become a loop."""
        return self.loop_end(text) is not None

    def loop_end(self, text: str) -> int | None:
        """Take more of the answer: None while it is no loop, else how much of ``text`` it took
        to become one (through the line that completed a cycle; all of it for a loop inside a
        line). A step of many lines is cut there, so it shows no more of the loop."""
        line = self._line
        done = line.feed(text)  # most deltas end no line
        if done:
            self._due = LONG_LINE
            looped = self._cycle_in(done)
            if looped is not None:
                return _after_line(text, looped)  # ``done[i]`` ends at the text's i-th line end
        if line.length < self._due:
            return None
        self._due = line.length + CHECK_EVERY
        # Inside a long line (here, not in a method of its own: this runs at every delta):
        # a loop of period p puts the line's last MIN_FRAGMENT characters p characters back
        # too, so only the periods where they are found are compared.
        tail = line.kept  # LONG_LINE characters at least, WINDOW once the line is that long
        edge = len(tail) - MIN_FRAGMENT
        probe = tail[edge:]
        lowest = edge - MAX_FRAGMENT
        found = tail.rfind(probe, lowest, edge)  # the nearest: the shortest period
        while found >= lowest:
            if repeats_at_end(tail, edge - found):
                return len(text)
            found = tail.rfind(probe, lowest, found + MIN_FRAGMENT - 1)
        return None

    def _cycle_in(self, done: list[str]) -> int | None:
        """Take the lines ``done`` completed: the index in ``done`` of the first at which the
        answer became a loop, if any.

        A cycle of any period repeats its last line within the ``MAX_PERIOD`` lines before it,
        and most lines of most answers equal none of them: a group of ``MAX_PERIOD`` new lines
        whose window (the group and the ``MAX_PERIOD`` lines before it) holds no line twice
        passes in one C-level set, without a look at each line (a fast answer's deltas end
        dozens of lines each)."""
        lines = self._lines
        start = len(lines)
        lines.extend(map(str.strip, done))
        end = len(lines)
        # A delta that ends a line or two (a model keeping pace): each looked at alone.
        step = MAX_PERIOD if end - start > 2 else 1
        for group in range(start, end, step):
            if step > 1:
                window = lines[max(0, group - MAX_PERIOD) : group + MAX_PERIOD]
                if len(set(window)) == len(window):
                    continue
            for at in range(group, min(end, group + step)):
                if lines[at] in lines[max(0, at - MAX_PERIOD) : at] and self._looping_at(at):
                    return at - start
        if end > 2 * KEPT_LINES:  # trimmed now and then, never below what a cycle check reads
            del lines[:-KEPT_LINES]
        return None

    def _looping_at(self, at: int) -> bool:
        """Whether the kept lines up to line ``at`` end in a cycle (line ``at`` equals one of the
        ``MAX_PERIOD`` before it). Once lines were dropped, at least ``KEPT_LINES`` come before
        ``at``: as many as the longest cycle reads."""
        lines = self._lines
        last = lines[at]
        for period in range(1, MAX_PERIOD + 1):
            span = period * MIN_REPEATS
            if at + 1 < span:
                break
            if lines[at - period] != last:
                continue  # most lines of most answers: one comparison per period, nothing built
            cycle = lines[at - period + 1 : at + 1]
            if sum(map(len, cycle)) < MIN_CYCLE_CHARS:
                continue
            first = at + 1 - span
            if all(lines[first + i] == cycle[i % period] for i in range(span)):
                return True
        return False


def _after_line(text: str, index: int) -> int:
    """The offset just past the ``index``-th (0-based) line end in ``text``."""
    at = -1
    for _ in range(index + 1):
        at = text.index("\n", at + 1)
    return at + 1
