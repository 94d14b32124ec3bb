"""Stream replacement lines into a Y.Text, in place, while the model writes them.

Every old line of the located region gets a sticky anchor at its first character, so
positions survive whatever people type meanwhile. Each completed new line is either
*kept* (it equals the next old line: nothing changes), or it lets the stream *pass* some
old lines (it equals an old line a little further on: the lines in between are deleted),
or it is *inserted* before the next old line. Old lines never kept are deleted at the end
of the block. The unfinished line is only reported (the ghost), never written.

A person's typing is never lost: before an old line is deleted its current text is
compared with what was located; if someone changed it, it stays and counts as a conflict.
"""

from __future__ import annotations

from typing import Any

from pycrdt import Assoc, Doc, StickyIndex, Text

from spark_ide.editing.lines import utf8_length
from spark_ide.editing.snapshot import FileSnapshot

# How far ahead a new line may match an old one; further matches are treated as new
# lines, which keeps a repeated line (`return None`) from deleting half a file early.
LOOKAHEAD_LINES = 50


class LineApplier:
    def __init__(
        self,
        *,
        doc: Doc[Any],
        ytext: Text,
        origin: str,
        snapshot: FileSnapshot,
        first_line: int,
        old_lines: tuple[str, ...],
        offset: int,
    ) -> None:
        """Anchor `old_lines`, found at code-point `offset` of a still-current snapshot."""
        self._doc = doc
        self._ytext = ytext
        self._origin = origin
        self._old = old_lines
        self.first_line = first_line
        position = utf8_length(snapshot.text[:offset])
        anchors: list[StickyIndex] = []
        for line in old_lines:
            anchors.append(ytext.sticky_index(position, Assoc.AFTER))
            position += utf8_length(line)
        self._anchors = anchors
        # Assoc.AFTER at the very end of a text makes pycrdt panic; the end of the file
        # is anchored to the character before it instead.
        self._end_at_eof = position >= snapshot.size
        if self._end_at_eof:
            self._end = ytext.sticky_index(snapshot.size, Assoc.BEFORE)
        else:
            self._end = ytext.sticky_index(position, Assoc.AFTER)
        self._next = 0  # first old line neither kept nor passed yet
        self._partial = ""
        self._written = 0
        self._conflicts: list[int] = []
        self._known = (snapshot.state, snapshot.size)
        self._foreign_changes = False
        self.transactions = 0  # each one is one undo-stack item

    @property
    def ghost(self) -> str:
        """The line being written, not yet in the document."""
        return self._partial

    @property
    def ghost_line(self) -> int:
        """1-based line where the ghost shows (as of the located position)."""
        return self.first_line + self._written + 1

    @property
    def line_range(self) -> tuple[int, int]:
        remaining = len(self._old) - self._next
        return self.first_line + 1, self.first_line + max(self._written + remaining, 1)

    @property
    def conflicts(self) -> tuple[int, ...]:
        """1-based (located) numbers of old lines kept because a person changed them."""
        return tuple(self._conflicts)

    def feed(self, chunk: str) -> None:
        if "\n" not in chunk:
            self._partial += chunk
            return
        *complete, self._partial = (self._partial + chunk).split("\n")
        for line in complete:
            self._commit(line + "\n")

    def finish(self) -> tuple[int, ...]:
        """Write the last line and delete the old lines that were not kept."""
        if self._partial:
            line, self._partial = self._partial, ""
            self._commit(line)
        self._delete(self._next, len(self._old))
        self._next = len(self._old)
        return self.conflicts

    def _commit(self, line: str) -> None:
        old = self._old
        current = self._next
        self._written += 1
        if current < len(old) and old[current] == line:
            self._next = current + 1
            return
        if line.strip():
            stop = min(len(old), current + 1 + LOOKAHEAD_LINES)
            try:
                passed_to = old.index(line, current + 1, stop)
            except ValueError:
                passed_to = -1
            if passed_to > 0:
                self._delete(current, passed_to)
                self._next = passed_to + 1
                return
        self._insert(line)

    def _insert(self, line: str) -> None:
        self._notice_foreign_changes()
        at_end = self._next >= len(self._old)
        anchor = self._end if at_end else self._anchors[self._next]
        with self._doc.transaction(origin=self._origin):
            position = anchor.get_index()
            self._ytext.insert(position, line)
        self.transactions += 1
        if at_end and self._end_at_eof:
            # Keep appending after our own last character, not after the old end.
            self._end = self._ytext.sticky_index(position + utf8_length(line), Assoc.BEFORE)
        self._remember_state()

    def _delete(self, first: int, stop: int) -> None:
        """Delete old lines [first, stop) unless a person changed them meanwhile."""
        if first >= stop:
            return
        self._notice_foreign_changes()
        bounds = [anchor.get_index() for anchor in self._anchors[first:stop]]
        bounds.append(
            self._anchors[stop].get_index() if stop < len(self._old) else self._end.get_index()
        )
        doomed = self._unchanged_lines(first, bounds)
        ranges: list[tuple[int, int]] = []
        for row in doomed:
            start, end = bounds[row - first], bounds[row - first + 1]
            if ranges and ranges[-1][1] == start:
                ranges[-1] = (ranges[-1][0], end)
            else:
                ranges.append((start, end))
        if ranges:
            with self._doc.transaction(origin=self._origin):
                for start, end in reversed(ranges):
                    del self._ytext[start:end]
            self.transactions += 1
            self._remember_state()

    def _unchanged_lines(self, first: int, bounds: list[int]) -> list[int]:
        rows = range(first, first + len(bounds) - 1)
        if not self._foreign_changes:
            return list(rows)
        current = str(self._ytext)
        encoded = current if current.isascii() else current.encode()
        unchanged: list[int] = []
        for row in rows:
            start, end = bounds[row - first], bounds[row - first + 1]
            old = self._old[row]
            expected = old if isinstance(encoded, str) else old.encode()
            if encoded[start:end] == expected:
                unchanged.append(row)
            else:
                self._conflicts.append(self.first_line + row + 1)
        return unchanged

    def _notice_foreign_changes(self) -> None:
        """Once anyone else touched the document, every deletion is checked first."""
        if not self._foreign_changes and (self._doc.get_state(), len(self._ytext)) != self._known:
            self._foreign_changes = True

    def _remember_state(self) -> None:
        if not self._foreign_changes:
            self._known = (self._doc.get_state(), len(self._ytext))
