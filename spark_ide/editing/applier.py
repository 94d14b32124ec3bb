"""Stream replacement lines into a Y.Text, in place, while the model writes them.

Every old line of the located region has an anchor at its first character, so positions
survive whatever people type meanwhile. Each completed new line is either *kept* (it
equals the next old line: nothing changes), or it lets the stream *pass* some old lines
(it equals an old line a little further on: the lines in between are deleted), or it is
*inserted* before the next old line. Old lines never kept are deleted at the end of the
block. The unfinished line is only reported (the ghost), never written.

The anchors are kept here rather than as pycrdt sticky indices: in pycrdt 0.14.13 those
are created from UTF-16 offsets but resolved partly in UTF-8 bytes, so they drift after
non-ASCII text. Y.Text positions and change deltas are UTF-8 byte offsets; the applier
shifts its anchors by the deltas of everybody else's changes and by its own edits.

A person's typing is never lost: before an old line is deleted its current text is
compared with what was located; if someone changed it, it stays and counts as a conflict.

A *literal* applier (a V4A hunk, which says itself which old lines stay and which go)
inserts every new line it is fed, and is told the rest line by line: `keep` and `drop` the
next old line, `extend` the region by the old line after it.
"""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing.lines import OpenLine, utf8_length
from spark_ide.editing.snapshot import FileSnapshot

# How far ahead a new line may match an old one; further matches are treated as new
# lines, which keeps a repeated line (`return None`) from deleting half a file early.
LOOKAHEAD_LINES = 50
# The ghost is the unfinished line's end, at most this long: a status per delta must not
# carry a line of 10^6 characters (the page shows the end, where the model is writing).
GHOST_CHARS = 256


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
        literal: bool = False,
    ) -> None:
        """Anchor `old_lines`, found at code-point `offset` of a still-current snapshot."""
        self._doc = doc
        self._ytext = ytext
        self._origin = origin
        self._old = list(old_lines)
        self._literal = literal
        self.first_line = first_line
        position = snapshot.byte_offset(offset)
        anchors: list[int] = []
        for line in old_lines:
            anchors.append(position)
            position += utf8_length(line)
        anchors.append(position)  # the end of the region
        # Byte positions of each old line's start, then of the region's end. Anchors
        # before `_next` are no longer used; `_shift` applies to all the others (our own
        # edits all happen at or before the next anchor, so they move every later one).
        self._anchors = anchors
        self._shift = 0
        self._start = anchors[0]  # the region's start (sticks like an old line's anchor)
        # Text typed right at the end of the file goes after the region, not into it.
        self._end_at_eof = position >= snapshot.size
        # The file's last line has no line end and nothing was written after it yet: a line
        # inserted after it first gives it one.
        self._unended = self._end_at_eof and snapshot.text != "" and not snapshot.text.endswith("\n")
        self._next = 0  # first old line neither kept nor passed yet
        self._line = OpenLine(tail_chars=GHOST_CHARS)
        self._written = 0
        self._conflicts: list[int] = []
        self._foreign_changes = False
        self.transactions = 0  # each one is one undo-stack item
        self._closed = False

    @property
    def ghost(self) -> str:
        """The line being written, not yet in the document: its last ``GHOST_CHARS``."""
        return self._line.tail(GHOST_CHARS)

    @property
    def ghost_from(self) -> int:
        """How many characters of the line being written come before ``ghost``."""
        return max(0, self._line.length - GHOST_CHARS)

    @property
    def ghost_line(self) -> int:
        """1-based line where the ghost shows (as of the located position)."""
        return self.first_line + self._written + 1

    @property
    def line_range(self) -> tuple[int, int]:
        remaining = len(self._old) - self._next
        return self.first_line + 1, self.first_line + max(self._written + remaining, 1)

    @property
    def located_range(self) -> tuple[int, int]:
        """The region as located, before any change (what a rollback restores)."""
        return self.first_line + 1, self.first_line + max(len(self._old), 1)

    @property
    def region(self) -> tuple[int, int]:
        """Byte positions of the region now: its start and its end (past what was written)."""
        return self._start, self._position(len(self._old))

    @property
    def pending_bytes(self) -> int:
        """Current size of the old lines not reached yet (the most the block may still delete)."""
        return self._anchors[-1] - self._anchors[self._next]

    @property
    def conflicts(self) -> tuple[int, ...]:
        """1-based (located) numbers of old lines kept because a person changed them."""
        return tuple(self._conflicts)

    @property
    def foreign_changes(self) -> bool:
        """Whether someone else changed the file since the region was located."""
        return self._foreign_changes

    @property
    def old_text(self) -> str:
        """The region's old lines as they were located (and extended)."""
        return "".join(self._old)

    @property
    def old_lines(self) -> int:
        return len(self._old)

    def feed(self, chunk: str) -> None:
        """The lines ``chunk`` completes go in; the lines inserted one after another go in one
        transaction (a step of a fast answer completes several)."""
        inserts: list[str] = []
        for line in self._line.feed(chunk):
            self._commit(line + "\n", inserts)
        self._flush(inserts)

    def keep(self) -> None:
        """Literal: the next old line stays as it is."""
        self._next += 1
        self._written += 1

    def drop(self) -> None:
        """Literal: delete the next old line (kept if a person changed it meanwhile)."""
        row = self._next
        self._delete(row, row + 1)
        self._next = row + 1
        if row == len(self._old) - 1:
            self._unended = False  # the unended last line went (the one before it has its "\n")

    def extend(self, line: str) -> None:
        """Literal: the old line right after the region (``line``, with its line end, as the
        file has it) joins the region."""
        self._old.append(line)
        self._anchors.append(self._anchors[-1] + utf8_length(line))
        self._end_at_eof = self._position(len(self._old)) >= len(self._ytext)
        self._unended = self._end_at_eof and not line.endswith("\n")

    def finish(self) -> tuple[int, ...]:
        """Write the last line and delete the old lines that were not kept."""
        if self._line:
            inserts: list[str] = []
            self._commit(self._line.take(), inserts)
            self._flush(inserts)
        self._delete(self._next, len(self._old))
        self._next = len(self._old)
        self.close()
        return self.conflicts

    def close(self) -> None:
        """Stop following the document (the block is over, or being rolled back)."""
        self._closed = True

    def _commit(self, line: str, inserts: list[str]) -> None:
        """Keep, pass to or insert ``line``; an insert waits in ``inserts`` (they all go before
        the next old line) until the next line is kept or passes some, or the chunk ends."""
        old = self._old
        current = self._next
        self._written += 1
        if self._literal:
            inserts.append(line)
            return
        if current < len(old) and old[current] == line:
            self._flush(inserts)
            self._next = current + 1
            return
        if line.strip():
            stop = min(len(old), current + 1 + LOOKAHEAD_LINES)
            try:
                passed_to = old.index(line, current + 1, stop)
            except ValueError:
                passed_to = -1
            if passed_to > 0:
                self._flush(inserts)
                self._delete(current, passed_to)
                self._next = passed_to + 1
                return
        inserts.append(line)

    def _flush(self, inserts: list[str]) -> None:
        if inserts:
            self._insert(inserts)
            inserts.clear()

    def _position(self, anchor: int) -> int:
        return self._anchors[anchor] + self._shift

    def _insert(self, lines: list[str]) -> None:
        """Insert ``lines`` before the next old line, in one transaction."""
        position = self._position(self._next)
        text = "".join(lines)
        if self._literal and self._unended and self._next == len(self._old):
            text = ("\r\n" if lines[0].endswith("\r\n") else "\n") + text
            self._unended = False
        with self._doc.transaction(origin=self._origin):
            self._ytext.insert(position, text)
        self._shift += utf8_length(text)
        self.transactions += 1

    def _delete(self, first: int, stop: int) -> None:
        """Delete old lines [first, stop) unless a person changed them meanwhile."""
        if first >= stop:
            return
        bounds = [self._position(anchor) for anchor in range(first, stop + 1)]
        ranges: list[tuple[int, int]] = []
        for row in self._unchanged_lines(first, bounds):
            start, end = bounds[row - first], bounds[row - first + 1]
            if ranges and ranges[-1][1] == start:
                ranges[-1] = (ranges[-1][0], end)
            else:
                ranges.append((start, end))
        if not ranges:
            return
        with self._doc.transaction(origin=self._origin):
            for start, end in reversed(ranges):
                del self._ytext[start:end]
        self._shift -= sum(end - start for start, end in ranges)
        self.transactions += 1

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

    def on_delta(self, delta: list[dict[str, Any]]) -> None:
        """Move the live anchors through the change ``delta`` (byte offsets) made by another
        origin: the owner observes the Y.Text and skips the applier's own edits, which
        ``_insert``/``_delete`` account for (``TurnEditor._watch``)."""
        if self._closed:
            return  # over
        self._foreign_changes = True
        first = self._next
        # The region's start goes last; while the region is empty it is the end and sticks
        # the same way.
        empty = self._start == self._position(len(self._old))
        live = [position + self._shift for position in self._anchors[first:]] + [self._start]
        end_anchor = len(live) - 2
        cursor = 0
        for op in delta:
            if "retain" in op:
                cursor += op["retain"]
            elif "insert" in op:
                inserted = op["insert"]
                size = utf8_length(inserted) if isinstance(inserted, str) else 1
                for index, position in enumerate(live):
                    at_end = index == end_anchor or (index > end_anchor and empty)
                    if position > cursor or (position == cursor and not (at_end and self._end_at_eof)):
                        live[index] = position + size
                cursor += size
            elif "delete" in op:
                size = op["delete"]
                for index, position in enumerate(live):
                    if position >= cursor + size:
                        live[index] = position - size
                    elif position > cursor:
                        live[index] = cursor
        self._start = live.pop()
        self._anchors[first:] = live
        self._shift = 0
