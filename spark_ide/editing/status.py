"""What the engine reports to the Pilot: block status changes and prose, in stream order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spark_ide.editing.locator import MatchStrategy
from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind

# A fence's code as its final status carries it (`code`): at most this many lines, each cut at
# this many characters (a cut line ends in CUT_MARK). The transcript shows no more of a block
# than this (the editor has the rest), so a status never weighs more than the page shows.
CODE_MAX_LINES = 400
CODE_LINE_CHARS = 2000
CUT_MARK = "\u2026"


def code_head(text: str) -> tuple[str, int | None]:
    """What a fence's final status carries of ``text``, the code it wrote: its first
    CODE_MAX_LINES lines, a longer line cut at CODE_LINE_CHARS with CUT_MARK after it (the
    text's line breaks kept, a trailing one included); and the number of lines ``text`` has
    when some were left out (None when all are there). Found by looking for line breaks, not
    by splitting the text: a model's one-line data literal of a megabyte costs one scan."""
    parts: list[str] = []
    at = 0
    for _ in range(CODE_MAX_LINES):
        stop = text.find("\n", at)
        end = len(text) if stop < 0 else stop
        if end - at > CODE_LINE_CHARS:
            parts.append(text[at : at + CODE_LINE_CHARS] + CUT_MARK)
        else:
            parts.append(text[at:end])
        if stop < 0:
            return "\n".join(parts), None
        at = stop + 1
    if at >= len(text):  # exactly CODE_MAX_LINES lines, the last one ended
        return "\n".join(parts) + "\n", None
    return "\n".join(parts) + "\n", CODE_MAX_LINES + text.count("\n", at) + (not text.endswith("\n"))


class EditState(StrEnum):
    """The `state` of PROTOCOL.md's `edit.status`."""

    LOCATING = "locating"
    STREAMING = "streaming"
    APPLIED = "applied"
    ROLLED_BACK = "rolled_back"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES


# Hashed, for the hot paths that test a status's state (a ``str``: a member hashes as its value).
FINAL_STATES = frozenset({EditState.APPLIED, EditState.ROLLED_BACK, EditState.FAILED})
IN_FLIGHT_STATES = frozenset(EditState) - FINAL_STATES  # the block is still being written


class BlockOperation(StrEnum):
    """An `apply_patch` block's file operation: `detail.operation` of its `edit.status`."""

    ADD = "add"  # an Add File: the file written whole (kind write)
    DELETE = "delete"  # a Delete File (kind write)
    UPDATE = "update"  # one hunk of an Update File (kind edit)
    MOVE = "move"  # an Update File's Move to: the file moves to `target` (kind edit)


# Not frozen: one is built per chunk while a block streams, and frozen dataclasses cost
# three times as much to construct. Treat them as values all the same.
@dataclass(slots=True)
class BlockStatus:
    """One `edit.status` for one block of one turn.

    `lines` is the 1-based inclusive region: while locating, the surviving candidate's
    place (None when zero or several remain, see `candidates`); while streaming and
    after, the region being rewritten (for `rolled_back` and `failed`: the region as located,
    which the rollback restored, and `written` the region the block had written when it
    stopped). `reason` is a `FailureReason` value for `failed`
    and a `RollbackReason` value for `rolled_back`. `fenced`: the block is a small model's
    Markdown code fence (taken as a write), in `language` if the fence names one; `merge`
    (applied fences only) says how its code went into the file. `code` (a fence's final
    status only): the code the model wrote in the fence, as `code_head` bounds it, and
    `code_lines` its line count when `code` leaves lines out. The transcript shows a fence
    from these, never from the document, which people may have typed into since. A block of
    an `apply_patch` call (patch.py) names the `call` and its file `operation` (`add` and
    `delete` are of kind write, `update` hunks and `move` of kind edit); a V4A hunk its `hunk`
    number within its file's operation; a move its `target` path.
    """

    turn: str
    block: int
    path: str
    kind: BlockKind
    state: EditState
    lines: tuple[int, int] | None = None
    candidates: tuple[int, ...] = ()
    ghost: str | None = None
    ghost_line: int | None = None
    ghost_from: int = 0  # characters of the unfinished line before `ghost` (its end only is sent)
    strategy: MatchStrategy | None = None
    reason: str | None = None
    message: str | None = None
    conflicts: tuple[int, ...] = ()
    fenced: bool = False
    language: str | None = None
    merge: MergeReport | None = None
    written: tuple[int, int] | None = None
    code: str | None = None
    code_lines: int | None = None
    hunk: int | None = None  # a V4A hunk: its number (from 1) in its file's operation
    call: str | None = None  # a block of an apply_patch tool call: the call's id
    operation: BlockOperation | None = None  # an apply_patch block's file operation
    target: str | None = None  # a patch's move: the path the file moved to

    def detail(self) -> dict[str, object]:
        """The JSON-able `detail` of the `edit.status` message (only what is known)."""
        detail: dict[str, object] = {"kind": self.kind.value}
        if self.fenced:
            detail["fenced"] = True
            if self.language is not None:
                detail["language"] = self.language
        if self.lines is not None:
            detail["lines"] = list(self.lines)
        if self.candidates:
            detail["candidates"] = list(self.candidates)
        if self.ghost is not None:
            detail["ghost"] = self.ghost
            detail["ghost_line"] = self.ghost_line
            if self.ghost_from:
                detail["ghost_from"] = self.ghost_from
        if self.strategy is not None:
            detail["strategy"] = self.strategy.value
        if self.reason is not None:
            detail["reason"] = self.reason
        if self.message is not None:
            detail["message"] = self.message
        if self.conflicts:
            detail["conflict"] = {"lines": list(self.conflicts)}
        if self.merge is not None:
            detail["merge"] = self.merge.as_dict()
        if self.written is not None:
            detail["written"] = list(self.written)
        if self.code is not None:
            detail["code"] = self.code
            if self.code_lines is not None:
                detail["code_lines"] = self.code_lines
        if self.hunk is not None:
            detail["hunk"] = self.hunk
        if self.call is not None:
            detail["call"] = self.call
        if self.operation is not None:
            detail["operation"] = self.operation
        if self.target is not None:
            detail["target"] = self.target
        return detail


@dataclass(slots=True)
class ProseEvent:
    """Model text outside edit blocks, for the transcript."""

    turn: str
    text: str


@dataclass(slots=True)
class CodeText:
    """New text a block sent to its file (what the watchdog reads, in stream order).

    `first_line` is the file line (1-based) the block's first new line lands on; the text
    of one block concatenates, chunk after chunk, to what the block wrote.
    """

    block: int
    path: str
    first_line: int
    text: str


EditEvent = BlockStatus | ProseEvent
