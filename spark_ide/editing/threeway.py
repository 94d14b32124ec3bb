"""Taking one change back out of a text that has changed since (a line-based three-way merge).

``take_back(before, after, now)``: a change turned ``before`` into ``after``; since then the
text became ``now``. The result is ``now`` with that change undone, as long as the lines the
change touched were left alone since; when later edits touch (or border on) them, there is no
answer that keeps both, and the result is None (the caller says so instead of guessing).

Used for a turn's revert once the document's undo history is gone (``TurnEditor.detach``).
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class _Change:
    """Lines ``start:end`` of the common ancestor replaced by ``lines``."""

    start: int
    end: int
    lines: tuple[str, ...]


def _changes(base: list[str], other: list[str]) -> list[_Change]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [
        _Change(i1, i2, tuple(other[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _clash(a: _Change, b: _Change) -> bool:
    """Whether two changes of the same ancestor overlap or border on each other (two
    insertions at one place included): either order of applying them would be a guess."""
    if a == b:
        return False
    return a.start <= b.end and b.start <= a.end


def take_back(before: str, after: str, now: str) -> str | None:
    """``now`` without the change ``before`` -> ``after`` (see the module docstring)."""
    if now == after:
        return before
    if before == after:
        return now
    base = after.splitlines(keepends=True)
    undo = _changes(base, before.splitlines(keepends=True))
    since = _changes(base, now.splitlines(keepends=True))
    for change in undo:
        if any(_clash(change, other) for other in since):
            return None
    merged: list[str] = []
    at = 0
    for change in sorted(set(undo) | set(since), key=lambda c: (c.start, c.end)):
        merged.extend(base[at:change.start])
        merged.extend(change.lines)
        at = change.end
    merged.extend(base[at:])
    return "".join(merged)
