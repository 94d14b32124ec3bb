"""Per turn: what became of each edit block, for the next prompt and for the UI."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind
from spark_ide.editing.reasons import FailureReason, RollbackReason
from spark_ide.editing.status import BlockStatus, EditState


class Outcome(StrEnum):
    IN_FLIGHT = "in_flight"
    APPLIED = "applied"
    UNCHANGED = "unchanged"  # applied, but the file already had the code: nothing changed
    CONFLICTED = "conflicted"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"
    REVERTED = "reverted"
    UNDONE = "undone"  # applied, then a person undid it alone (hunk review)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    block: int
    path: str
    kind: BlockKind
    outcome: Outcome
    lines: tuple[int, int] | None = None
    reason: str | None = None
    candidates: tuple[int, ...] = ()
    conflicts: tuple[int, ...] = ()
    merge: MergeReport | None = None
    note: str | None = None  # an undone block's: who undid it ("undone by ada")

    @classmethod
    def from_status(cls, status: BlockStatus) -> LedgerEntry:
        return cls(
            block=status.block,
            path=status.path,
            kind=status.kind,
            outcome=_outcome(status),
            lines=status.lines,
            reason=status.reason,
            candidates=status.candidates,
            conflicts=status.conflicts,
            merge=status.merge,
            note=status.message if status.reason == RollbackReason.UNDONE else None,
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "block": self.block,
            "path": self.path,
            "kind": self.kind.value,
            "outcome": self.outcome.value,
            "lines": list(self.lines) if self.lines else None,
            "reason": self.reason,
            "candidates": list(self.candidates),
            "conflicts": list(self.conflicts),
            "merge": self.merge.as_dict() if self.merge is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LedgerEntry:
        """An entry back from ``as_dict`` (a turn's stored ledger); ``ValueError`` or ``KeyError``
        for what ``as_dict`` never makes."""
        lines, merge = data.get("lines"), data.get("merge")
        return cls(
            block=int(data["block"]), path=str(data["path"]), kind=BlockKind(data["kind"]),
            outcome=Outcome(data["outcome"]),
            lines=(int(lines[0]), int(lines[1])) if isinstance(lines, list | tuple) and len(lines) == 2 else None,
            reason=None if data.get("reason") is None else str(data["reason"]),
            candidates=tuple(int(row) for row in data.get("candidates") or ()),
            conflicts=tuple(int(row) for row in data.get("conflicts") or ()),
            merge=MergeReport.from_dict(merge) if isinstance(merge, Mapping) else None,
        )

    def describe(self) -> str:
        """One compact line for a prompt."""
        where = f"<{self.kind.value}> {self.path or '(no path)'}"
        landed = self.outcome in (Outcome.APPLIED, Outcome.CONFLICTED, Outcome.UNCHANGED)
        if self.lines and landed:
            where += f" lines {self.lines[0]}-{self.lines[1]}"
        text = f"block {self.block} {where}: {self.outcome.value.replace('_', ' ')}"
        if self.merge is not None and landed:
            text += f" ({self.merge.describe()})"
        if self.outcome is Outcome.FAILED and self.reason:
            text += f" ({self.reason}: {_explain(self.reason)})"
            if self.candidates:
                text += "; candidates at lines " + ", ".join(map(str, self.candidates))
        elif self.outcome is Outcome.UNDONE:
            text += f" ({self.note or 'by a person'}: it is not in the file; do not apply it again unless asked)"
        elif self.outcome is Outcome.CONFLICTED:
            rows = ", ".join(map(str, self.conflicts))
            text += f" (lines {rows} were changed by a person meanwhile and kept as they are)"
        return text


def _outcome(status: BlockStatus) -> Outcome:
    state = status.state
    if state is EditState.APPLIED:
        if status.conflicts:
            return Outcome.CONFLICTED
        unchanged = status.merge is not None and not status.merge.changed
        return Outcome.UNCHANGED if unchanged else Outcome.APPLIED
    if state is EditState.FAILED:
        return Outcome.FAILED
    if state is EditState.ROLLED_BACK:
        if status.reason == RollbackReason.UNDONE:
            return Outcome.UNDONE
        return Outcome.REVERTED if status.reason == RollbackReason.REVERTED else Outcome.ROLLED_BACK
    return Outcome.IN_FLIGHT


def _explain(reason: str) -> str:
    try:
        return FailureReason(reason).explanation
    except ValueError:
        return reason


class Ledger:
    def __init__(self, turn: str) -> None:
        self.turn = turn
        self._entries: dict[int, LedgerEntry] = {}

    def record(self, status: BlockStatus) -> None:
        self._entries[status.block] = LedgerEntry.from_status(status)

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries[block] for block in sorted(self._entries))

    def entry(self, block: int) -> LedgerEntry:
        return self._entries[block]

    def with_outcome(self, *outcomes: Outcome) -> tuple[LedgerEntry, ...]:
        return tuple(entry for entry in self.entries if entry.outcome in outcomes)

    def changed(self) -> tuple[LedgerEntry, ...]:
        """The blocks that changed the files (applied, or applied over a person's edit)."""
        return self.with_outcome(Outcome.APPLIED, Outcome.CONFLICTED)

    def counts(self) -> dict[str, int]:
        counts = {outcome.value: 0 for outcome in Outcome}
        for entry in self._entries.values():
            counts[entry.outcome.value] += 1
        return counts

    @classmethod
    def from_dicts(cls, turn: str, entries: Iterable[Mapping[str, Any]]) -> Ledger:
        """A turn's ledger back from its ``as_dicts`` (as its record stores it)."""
        ledger = cls(turn)
        for data in entries:
            entry = LedgerEntry.from_dict(data)
            ledger._entries[entry.block] = entry
        return ledger

    def mark_reverted(self) -> None:
        """The blocks that changed the files, as a revert of the turn leaves them
        (``TurnEditor.revert``): for a stored ledger of a turn recorded as reverted."""
        for entry in self.changed():
            self._entries[entry.block] = LedgerEntry(
                block=entry.block, path=entry.path, kind=entry.kind, outcome=Outcome.REVERTED, lines=entry.lines,
                reason=RollbackReason.REVERTED.value,
            )

    def as_dicts(self) -> list[dict[str, object]]:
        return [entry.as_dict() for entry in self.entries]

    def as_prompt(self) -> str:
        """Compact text telling the model what happened to its edits."""
        if not self._entries:
            return f"Turn {self.turn}: no edit blocks."
        lines = [f"Edit blocks of turn {self.turn}:"]
        lines.extend(f"- {entry.describe()}" for entry in self.entries)
        return "\n".join(lines)
