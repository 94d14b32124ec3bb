"""The blocks of an `apply_patch` call: a V4A hunk applied in place while it streams, and
the file operations (delete, move) of a patch.

A hunk locates itself as soon as it can write something: at its first `+` line once it has
an old line or an `@@` anchor (its old lines so far are searched from the file's cursor, with
the V4A rules of v4a_match.py); it then drops its `-` lines and streams its `+` lines at that
spot (a literal `LineApplier`: ghost line, one transaction per change). Each later old line
must be the file's next line there, compared at the level the hunk was found at; when it is
not, the `PatchCall` rolls the hunk back and the hunk waits for its end, to be located with
all its old lines and applied at once. By construction the result is what locating the whole
hunk would give: a place that matches all the old lines at the level of the first ones is the
first such place (an earlier one would have matched the first lines too).
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Any

from pycrdt import Doc, Map, Text

from spark_ide.editing.block import BlockFailure, EditBlock
from spark_ide.editing.limits import FileLimits
from spark_ide.editing.locator import MatchStrategy
from spark_ide.editing.parse_events import BlockKind, BlockOpened
from spark_ide.editing.paths import block_path, path_conflict
from spark_ide.editing.reasons import FailureReason
from spark_ide.editing.runner import shift_through
from spark_ide.editing.snapshot import FileSnapshot
from spark_ide.editing.status import BlockOperation, BlockStatus, EditState
from spark_ide.editing.v4a_match import LEVELS, describe_miss, fold, matches_at, seek, shown


class FileCursor:
    """Where a file's next hunk is searched from: a Y.Text byte position that follows other
    people's edits (text typed right at it stays after it, so it is searched too)."""

    def __init__(self) -> None:
        self.position = 0
        self.eol: str | None = None  # the file's line end, as its operation's first hunk found it

    def on_delta(self, delta: list[dict[str, Any]]) -> None:
        self.position = shift_through(self.position, delta, pushed_at=False)

    def line(self, text: str) -> int:
        """The 0-based line of ``text`` (the file now) the cursor is on."""
        offset = self.position
        if not text.isascii():
            offset = len(text.encode()[:offset].decode(errors="ignore"))
        return text.count("\n", 0, offset)


class _Step(Enum):
    KEEP = auto()
    DROP = auto()
    ADD = auto()


class FileLines:
    """A file's text split once into lines, for locating a hunk."""

    def __init__(self, text: str) -> None:
        raw = text.split("\n")
        self.ended = text.endswith("\n")  # (an empty file: no lines)
        if raw[-1] == "":
            raw.pop()
        self.raw = raw  # without "\n" (a CRLF line keeps its "\r")
        self.bodies = [line.removesuffix("\r") for line in raw] if "\r" in text else raw
        self.eol = "\r\n" if raw and raw[0].endswith("\r") else "\n"  # (the first line's)
        self.size = len(text)

    def line(self, row: int) -> str | None:
        """Line ``row`` with its line end as the file has it; None past the end."""
        if row >= len(self.raw):
            return None
        return self.raw[row] + ("\n" if row < len(self.raw) - 1 or self.ended else "")

    def offset(self, row: int) -> int:
        """Code-point offset of line ``row`` (the end of the text for the line after the last)."""
        return min(sum(map(len, self.raw[:row])) + row, self.size)


class HunkBlock(EditBlock):
    """One hunk of a V4A update; the `PatchCall` routes the parser's events to it."""

    def __init__(
        self, *, turn: str, index: int, path: str, hunk: int, call: str, limits: FileLimits, cursor: FileCursor
    ) -> None:
        super().__init__(turn=turn, opened=BlockOpened(index, BlockKind.EDIT, path), limits=limits)
        self.hunk, self.call, self.operation, self.literal = hunk, call, BlockOperation.UPDATE, True
        self._cursor = cursor
        self._anchors: list[str] = []
        self._old: list[str] = []  # its old lines (context and -), as the patch has them
        self._steps: list[tuple[_Step, str]] = []  # all it said, in order (replayed when located)
        self._file: FileLines | None = None  # the file when the hunk was located
        self._first = 0  # the located region's first line there
        self._start_line = 0  # where the search started (after the anchors)
        self._level = MatchStrategy.EXACT
        self._waiting = False  # rolled back: located again at its end
        self._added = False  # a + line came
        self._eol = "\n"  # what ends the lines it adds
        self._fed: list[str] = []  # + text written since the last take_written (the watchdog's)

    def open(self, doc: Doc[Any], files: Map[Text]) -> None:
        path = block_path(self.path or None, max_length=self._limits.max_path_length)
        if isinstance(path, FailureReason):
            raise BlockFailure(path)
        self.path = path
        existing = files.get(path)
        if not isinstance(existing, Text):
            message = f"{path} does not exist (a patch creates a file with '*** Add File: {path}')"
            raise BlockFailure(FailureReason.FILE_NOT_FOUND, message=message)
        self._ytext, self._doc = existing, doc

    @property
    def has_lines(self) -> bool:
        return bool(self._steps)

    @property
    def located(self) -> bool:
        return self._applier is not None

    @property
    def sought(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What it looks for in the file: its ``@@`` lines, and its old lines after them."""
        return tuple(self._anchors), tuple(self._old)

    def take_anchor(self, text: str) -> None:
        self._anchors.append(text)

    def take_added(self, text: str) -> None:
        """A piece of a `+` line; locates the hunk first when it can (a `BlockFailure` ends it)."""
        self._steps.append((_Step.ADD, text))
        self._added = True
        if self._applier is not None:
            self._feed(text)
        elif not self._waiting and (self._old or self._anchors):
            self._locate(end_of_file=False)

    def take_old(self, text: str, removed: bool) -> bool:
        """A context or removed line. False: it is not the file's next line where the hunk was
        streaming, so the hunk must be rolled back (then `wait`)."""
        self._old.append(text)
        self._steps.append((_Step.DROP if removed else _Step.KEEP, text))
        applier = self._applier
        if applier is None:
            if not self._waiting and self._added:
                self._locate(end_of_file=False)  # + lines came first: they go before this line
            return True
        line = self._next_line()
        if line is None or fold(line.rstrip("\n").removesuffix("\r"), self._level) != fold(text, self._level):
            return False
        applier.extend(line)
        self._apply(self._steps[-1])
        return True

    def take_written(self) -> list[str]:
        """The + text sent to the file since the last call (held text once it is located, and
        again after the hunk moved)."""
        fed, self._fed = self._fed, []
        return fed

    def wait(self) -> None:
        """The hunk was rolled back: it is located again, with all its old lines, at its end."""
        self._applier = None
        self._waiting = True
        self.state = EditState.LOCATING
        self.changed = True

    def misplaced(self, end_of_file: bool) -> bool:
        """At the hunk's end: whether it streamed somewhere the whole hunk does not go (an
        `*** End of File` hunk that matches at the very end too); then it is rolled back."""
        file = self._file
        if not end_of_file or file is None or self._applier is None or not self._old:
            return False
        at = len(file.bodies) - len(self._old)
        if at == self._first or at < self._start_line:
            return False
        return any(matches_at(file.bodies, self._old, at, level) for level in LEVELS)

    def complete_hunk(self, end_of_file: bool) -> BlockStatus:
        """The hunk is all there: locate it now if it is not yet, write the rest, settle."""
        if not self._steps:
            raise BlockFailure(FailureReason.MALFORMED_BLOCK, message=f"hunk {self.hunk} of {self.path} has no lines")
        if self._applier is None:
            self._locate(end_of_file=end_of_file)
        return self.complete()

    def cursor_after(self) -> int | None:
        """Where the file's next hunk is searched from (None: where it was, after a hunk of
        only + lines and no anchor, appended at the end of the file as V4A does)."""
        if self._applier is None or (not self._old and not self._anchors):
            return None
        return self._applier.region[1]

    # -- locating and writing --

    def _locate(self, *, end_of_file: bool) -> None:
        assert self._ytext is not None and self._doc is not None
        snapshot = FileSnapshot.take(self._doc, self._ytext)
        file = FileLines(snapshot.text)
        start = self._cursor.line(snapshot.text)
        for anchor in self._anchors:
            found = seek(file.bodies, [anchor], start)
            if found is None:
                where = f"is not in {self.path} from line {start + 1} on"
                message = f"hunk {self.hunk}: its @@ line {shown(anchor)} {where}"
                raise BlockFailure(FailureReason.NO_MATCH, message=message)
            start = found.line + 1
        first, level = (start if self._anchors else len(file.bodies)), MatchStrategy.EXACT
        if self._old:
            found = seek(file.bodies, self._old, start, end_of_file=end_of_file)
            if found is None:
                message = f"hunk {self.hunk}: " + describe_miss(file.bodies, self._old, start, self.path)
                raise BlockFailure(FailureReason.NO_MATCH, message=message)
            first, level = found.line, found.level
        if self._cursor.eol is None:
            self._cursor.eol = file.eol
        self._eol = self._cursor.eol
        self._file, self._first, self._start_line, self._level = file, first, start, level
        region = tuple(file.line(row) or "" for row in range(first, first + len(self._old)))
        self._start_applier(self._doc, snapshot, first, region, file.offset(first))
        self._strategy = level
        for step in self._steps:
            self._apply(step)

    def _apply(self, step: tuple[_Step, str]) -> None:
        assert self._applier is not None
        kind, text = step
        if kind is _Step.KEEP:
            self._applier.keep()
        elif kind is _Step.DROP:
            self._applier.drop()
        else:
            self._feed(text)

    def _feed(self, text: str) -> None:
        assert self._applier is not None
        eol = self._eol
        self._applier.feed(text if eol == "\n" else text.replace("\n", eol))
        self._fed.append(text)
        self.changed = True

    def _next_line(self) -> str | None:
        """The file's line right after the region (with its line end), None at the end."""
        assert self._applier is not None and self._file is not None and self._ytext is not None
        if not self._applier.foreign_changes:
            return self._file.line(self._first + self._applier.old_lines)
        text = str(self._ytext)  # someone else changed the file: read it where the region ends
        end = self._applier.region[1]
        if not text.isascii():
            end = len(text.encode()[:end].decode(errors="ignore"))
        if end >= len(text):
            return None
        stop = text.find("\n", end)
        return text[end:] if stop < 0 else text[end : stop + 1]


class FileOpBlock(EditBlock):
    """A patch's `*** Delete File` (``target`` None) or `*** Move to` (the file moves to
    ``target`` as it is now): one transaction of the block's origin, so cancel and revert
    take it back like any edit (pycrdt's undo brings a removed file back with its text)."""

    def __init__(
        self, *, turn: str, index: int, path: str, target: str | None, call: str, limits: FileLimits
    ) -> None:
        kind = BlockKind.EDIT if target is not None else BlockKind.WRITE
        super().__init__(turn=turn, opened=BlockOpened(index, kind, path), limits=limits)
        self.call, self.target = call, target
        self.operation = BlockOperation.MOVE if target is not None else BlockOperation.DELETE

    def open(self, doc: Doc[Any], files: Map[Text]) -> None:
        limit = self._limits.max_path_length
        path = block_path(self.path or None, max_length=limit)
        if isinstance(path, FailureReason):
            raise BlockFailure(path)
        self.path = path
        existing = files.get(path)
        if not isinstance(existing, Text):
            raise BlockFailure(FailureReason.FILE_NOT_FOUND, message=f"{path} does not exist")
        if self.target is None:
            with doc.transaction(origin=self.origin):
                del files[path]
            self._own_transactions = 1
            return
        target = block_path(self.target or None, max_length=limit)
        if isinstance(target, FailureReason):
            raise BlockFailure(target, message=f"cannot move {path} to {self.target!r}: {target.explanation}")
        self.target = target
        if target == path:
            return
        if target in files:
            raise BlockFailure(FailureReason.PATH_CONFLICT, message=f"cannot move {path}: {target} already exists")
        conflict = path_conflict(target, set(files.keys()) - {path})
        if conflict is not None:
            raise BlockFailure(FailureReason.PATH_CONFLICT, message=f"cannot move {path}: {conflict}")
        with doc.transaction(origin=self.origin):
            text = str(existing)
            del files[path]
            files[target] = Text(text)
        self._own_transactions = 1
