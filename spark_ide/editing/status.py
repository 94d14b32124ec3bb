"""What the engine reports to the Pilot: block status changes and prose, in stream order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spark_ide.editing.locator import MatchStrategy
from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind


class EditState(StrEnum):
    """The `state` of PROTOCOL.md's `edit.status`."""

    LOCATING = "locating"
    STREAMING = "streaming"
    APPLIED = "applied"
    ROLLED_BACK = "rolled_back"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in (EditState.APPLIED, EditState.ROLLED_BACK, EditState.FAILED)


# Not frozen: one is built per chunk while a block streams, and frozen dataclasses cost
# three times as much to construct. Treat them as values all the same.
@dataclass(slots=True)
class BlockStatus:
    """One `edit.status` for one block of one turn.

    `lines` is the 1-based inclusive region: while locating, the surviving candidate's
    place (None when zero or several remain, see `candidates`); while streaming and
    after, the region being rewritten. `reason` is a `FailureReason` value for `failed`
    and a `RollbackReason` value for `rolled_back`. `fenced`: the block is a small model's
    Markdown code fence (taken as a write), in `language` if the fence names one; `merge`
    (applied fences only) says how its code went into the file.
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
        return detail

    def as_message(self) -> dict[str, object]:
        """PROTOCOL.md `edit.status` (the Pilot adds `seq`)."""
        return {
            "type": "edit.status",
            "turn": self.turn,
            "block": self.block,
            "path": self.path,
            "state": self.state.value,
            "detail": self.detail(),
        }


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
