"""Incremental parser for OpenAI's V4A patch format (what `apply_patch` carries).

```
*** Begin Patch
*** Add File: path          then "+" lines: the new file
*** Delete File: path
*** Update File: path
*** Move to: new/path       (optional, right after Update)
@@ <anchor line>            (or a bare "@@"; several may stack; the first hunk may omit it)
 context line
-removed line
+added line
*** End of File             (optional: the hunk ends at the end of the file)
*** End Patch
```

Text arrives in chunks split anywhere. A `+` line is passed on as it grows (`AddedText`, its
"\\n" last), so the applier can show it while it is written; every other line is held until
it is whole, then classified (a marker split over chunks, `*** Upd` | `ate File:`, is whole
by then). Marker lines may have blanks around them; CRLF line ends are read as LF. Blank
lines inside an operation are held too: they are empty context lines (an Add File's empty
lines) when another line of the operation follows, and dropped when a marker does.

`headless` is the built-in tool's form: one operation named up front, its diff without the
envelope (an update's hunks, a creation's `+` lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, StrEnum, auto

from spark_ide.editing.lines import OpenLine


class PatchOpKind(StrEnum):
    ADD = "add"
    DELETE = "delete"
    UPDATE = "update"


@dataclass(frozen=True, slots=True)
class OperationOpened:
    kind: PatchOpKind
    path: str
    line: int  # 1-based line of the patch


@dataclass(frozen=True, slots=True)
class MovedTo:
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class HunkOpened:
    line: int


@dataclass(frozen=True, slots=True)
class AnchorLine:
    """An `@@ <line>`: the cursor moves past that line before the hunk is searched."""

    text: str
    line: int


@dataclass(frozen=True, slots=True)
class OldLine:
    """A context (` `) or removed (`-`) line of a hunk, whole, without its line end."""

    text: str
    removed: bool
    line: int


@dataclass(frozen=True, slots=True)
class AddedText:
    """A piece of a `+` line (of a hunk or of an added file); "\\n" ends the line."""

    text: str


@dataclass(frozen=True, slots=True)
class HunkClosed:
    end_of_file: bool


@dataclass(frozen=True, slots=True)
class OperationClosed:
    pass


@dataclass(frozen=True, slots=True)
class PatchBroken:
    """A line the format does not allow here: what it belongs to fails; the parser skips to
    the next operation."""

    message: str
    line: int


PatchEvent = (
    OperationOpened | MovedTo | HunkOpened | AnchorLine | OldLine | AddedText | HunkClosed | OperationClosed
    | PatchBroken
)

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"
_HEADER = re.compile(r"\*\*\* (Add|Delete|Update) File:(.*)")
_MOVE = re.compile(r"\*\*\* Move to:(.*)")
# A unified-diff range after "@@" ("@@ -12,5 +12,6 @@ def f():") names no line of the file.
_RANGE = re.compile(r"-\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?")
_KINDS = {"Add": PatchOpKind.ADD, "Delete": PatchOpKind.DELETE, "Update": PatchOpKind.UPDATE}


class _State(Enum):
    BEFORE = auto()  # expecting *** Begin Patch
    PATCH = auto()  # between operations
    ADD = auto()  # an added file's + lines
    UPDATE = auto()  # after *** Update File (a Move to may come), before any hunk line
    HUNK = auto()  # in a hunk
    SKIP = auto()  # after a broken line: until the next operation
    DONE = auto()  # after *** End Patch (the rest is ignored)


class V4AParser:
    """``feed(chunk)`` and ``finish()`` return the `PatchEvent`s the text completes."""

    def __init__(self, headless: tuple[PatchOpKind, str] | None = None) -> None:
        self._state = _State.BEFORE
        self._line = OpenLine()  # a line being held until it is whole
        self._adding = False  # inside a + line, passed on as it comes
        self._held_cr = False  # a "\r" at a chunk's end, inside a + line
        self._blanks = 0  # blank lines held (see the module docstring)
        self._number = 0  # lines completed so far
        self._hunk_lines = 0  # lines of the open hunk
        self._headless = headless is not None
        self._out: list[PatchEvent] = []
        if headless is not None:
            kind, path = headless
            self._open(kind, path)

    def feed(self, chunk: str) -> list[PatchEvent]:
        at, size = 0, len(chunk)
        while at < size:
            if self._adding:
                at = self._add_text(chunk, at)
            elif not self._line and chunk[at] == "+" and self._takes_plus():
                self._start_added_line()
                at += 1
            else:
                stop = chunk.find("\n", at)
                if stop < 0:
                    self._line.feed(chunk[at:])
                    break
                (line,) = self._line.feed(chunk[at:stop] + "\n")[:1]
                at = stop + 1
                self._number += 1
                self._take_line(line.removesuffix("\r"))
        out, self._out = self._out, []
        return out

    def finish(self) -> list[PatchEvent]:
        """The input ended: a last line without its line end counts; what is open closes."""
        if self._adding:
            self._end_added_line()
        elif self._line:
            self._number += 1
            self._take_line(self._line.take().removesuffix("\r"))
        self._close_operation()
        self._state = _State.DONE
        out, self._out = self._out, []
        return out

    # -- + lines, passed on as they grow --

    def _takes_plus(self) -> bool:
        return self._state in (_State.ADD, _State.UPDATE, _State.HUNK)

    def _start_added_line(self) -> None:
        if self._state is _State.UPDATE:
            self._open_hunk()
        self._flush_blanks()
        self._adding = True
        self._hunk_lines += 1

    def _add_text(self, chunk: str, at: int) -> int:
        stop = chunk.find("\n", at)
        piece = chunk[at:] if stop < 0 else chunk[at:stop]
        if self._held_cr:
            self._held_cr = False
            if piece or stop < 0:
                piece = "\r" + piece
        if stop < 0:
            if piece.endswith("\r"):  # maybe CRLF split over chunks
                self._held_cr, piece = True, piece[:-1]
            if piece:
                self._out.append(AddedText(piece))
            return len(chunk)
        if piece.endswith("\r"):
            piece = piece[:-1]
        if piece:
            self._out.append(AddedText(piece))
        self._number += 1
        self._end_added_line()
        return stop + 1

    def _end_added_line(self) -> None:
        self._held_cr = False
        self._adding = False
        self._out.append(AddedText("\n"))

    # -- whole lines --

    def _take_line(self, line: str) -> None:
        state = self._state
        if state is _State.DONE:
            return
        stripped = line.strip()
        if stripped.startswith("***") and self._marker(stripped):
            return
        if state in (_State.UPDATE, _State.HUNK) and self._hunk_line(line, stripped):
            return
        if state is _State.ADD and not stripped:
            self._blanks += 1
            return
        if state in (_State.BEFORE, _State.PATCH) and not stripped:
            return
        if state is not _State.SKIP:
            self._broken(line)

    def _marker(self, stripped: str) -> bool:
        """Handle a `***` line; False when it is no marker (then it is a hunk line)."""
        if stripped == BEGIN:
            if self._state in (_State.BEFORE, _State.SKIP):
                self._state = _State.PATCH
                return True
            return False
        if stripped == END:
            self._close_operation()
            self._state = _State.DONE
            return True
        if stripped == END_OF_FILE:
            if self._state is not _State.HUNK:
                return False
            self._blanks = 0
            self._close_hunk(end_of_file=True)
            return True
        header = _HEADER.fullmatch(stripped)
        if header is not None:
            self._close_operation()
            self._open(_KINDS[header.group(1)], header.group(2).strip())
            return True
        move = _MOVE.fullmatch(stripped)
        if move is not None and self._state is _State.UPDATE:
            self._out.append(MovedTo(move.group(1).strip(), self._number))
            return True
        return False

    def _hunk_line(self, line: str, stripped: str) -> bool:
        """Handle a line of an update; False when it is none."""
        if stripped.startswith("@@") and (line.startswith("@@") or self._hunk_lines == 0):
            anchor = line.lstrip()[2:].removeprefix(" ")  # (its own blanks are matched loosely)
            anchor = _RANGE.sub("", anchor, count=1) if _RANGE.match(anchor) else anchor
            self._blanks = 0
            if self._state is _State.HUNK and self._hunk_lines:
                self._close_hunk(end_of_file=False)
            if self._state is not _State.HUNK:
                self._open_hunk()
            if anchor.strip():
                self._out.append(AnchorLine(anchor, self._number))
            return True
        if not line:
            self._blanks += 1
            return True
        if line[0] in " -":
            if self._state is _State.UPDATE:
                self._open_hunk()
            self._flush_blanks()
            self._hunk_lines += 1
            self._out.append(OldLine(line[1:], line[0] == "-", self._number))
            return True
        return False

    def _flush_blanks(self) -> None:
        """Blank lines held, now followed by a line of the same operation."""
        blanks, self._blanks = self._blanks, 0
        for _ in range(blanks):
            if self._state is _State.ADD:
                self._out.append(AddedText("\n"))
            else:
                self._hunk_lines += 1
                self._out.append(OldLine("", False, self._number))

    def _broken(self, line: str) -> None:
        shown = line if len(line) <= 80 else line[:80] + "\u2026"
        if self._state is _State.BEFORE:
            message = f"the patch must start with '{BEGIN}', not {shown!r}"
        elif self._state is _State.ADD:
            message = f"{shown!r}: each line of an added file starts with '+'"
        elif self._state in (_State.UPDATE, _State.HUNK):
            message = f"{shown!r}: each line of a hunk starts with ' ', '-' or '+' (or is an '@@' line)"
        else:
            message = f"{shown!r} is not an operation ('*** Add File:', '*** Update File:', '*** Delete File:')"
        self._out.append(PatchBroken(f"patch line {self._number}: {message}", self._number))
        self._blanks = 0
        self._state = _State.SKIP

    # -- operations and hunks --

    def _open(self, kind: PatchOpKind, path: str) -> None:
        self._out.append(OperationOpened(kind, path, self._number))
        self._blanks = 0
        self._state = {
            PatchOpKind.ADD: _State.ADD, PatchOpKind.UPDATE: _State.UPDATE, PatchOpKind.DELETE: _State.PATCH,
        }[kind]
        if kind is PatchOpKind.DELETE:
            self._out.append(OperationClosed())

    def _open_hunk(self) -> None:
        self._state = _State.HUNK
        self._hunk_lines = 0
        self._out.append(HunkOpened(self._number))

    def _close_hunk(self, *, end_of_file: bool) -> None:
        self._out.append(HunkClosed(end_of_file))
        self._hunk_lines = 0
        self._state = _State.UPDATE

    def _close_operation(self) -> None:
        state = self._state
        self._blanks = 0
        if state is _State.HUNK:
            self._close_hunk(end_of_file=False)
        if state in (_State.ADD, _State.UPDATE, _State.HUNK):
            self._out.append(OperationClosed())
        if state is not _State.DONE:
            self._state = _State.PATCH
