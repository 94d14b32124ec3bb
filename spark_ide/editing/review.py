"""Keeping or undoing one applied block of a turn on its own (hunk review).

Every block gets an undo manager of its own while it runs, tracking only its origin
(``ai:<turn>:<block>``): its stack holds that block's transactions and nothing else. When the
block applies, ``Landed`` keeps those stack items merged into one (``change``; the manager
goes: a live undo manager is called on every transaction of the document, and a room keeps
many turns) and what the block left in its file: the text of the lines it wrote, with the
line before and the line after them, and where they were.

Undoing the block (``undo_landed``) first finds those lines, unchanged, in the file as it is
now (nearest to where they were: people may have typed above them). When they are not there
— a person, or a later block, changed the lines the block wrote or the lines beside them —
taking the block back through its undo history would mix its old text into theirs: its
change is taken back out as text instead, with the three-way take-back (``threeway``), when
the lines it changed and those beside them were left alone (``_merge_back``); else the undo
is refused. When they are there, the block's change is undone through a throwaway undo manager,
as one transaction: pycrdt's undo deletes exactly the characters
the block inserted and brings back exactly those it deleted, so people's typing elsewhere
stays. The result is checked: everything outside the block's lines must be as it was, or
the undo is redone and refused.

The turn's own undo manager (``BlockRunner._undo``) still holds the block's items: a later
revert of the turn undoes them again, which changes nothing (their insertions are deleted
already, their deletions were brought back once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycrdt import Map, StackItem, Text, UndoManager

from spark_ide.editing.lines import utf8_length
from spark_ide.editing.reasons import ReviewRefused
from spark_ide.editing.threeway import take_back


@dataclass(slots=True)
class Landed:
    """An applied block that can still be undone on its own (see the module docstring)."""

    block: int
    path: str
    change: StackItem[Any] | None  # the block's transactions, merged (None: it made none)
    old: str | None  # the lines it replaced, as it found them (None: not known, a fence merged by structure)
    before: str  # the line before the block's lines (with its line end), "" at the file's start
    text: str  # the lines the block wrote, as it left them
    after: str  # the line after them, "" at the file's end
    at: int  # code-point offset of ``before`` in the file when the block applied
    created: bool  # the block created its file (an empty file is removed when it is undone)
    file_origin: str

    @property
    def key(self) -> str:
        return self.before + self.text + self.after


def merged(manager: UndoManager) -> StackItem[Any] | None:
    """Everything on ``manager``'s undo stack as one item (None: nothing)."""
    items = manager.undo_stack
    if not items:
        return None
    change = items[0]
    for item in items[1:]:
        change = StackItem.merge(change, item)
    return change


def lines_around(text: str, start: int, end: int) -> tuple[int, str, str]:
    """For the code points ``start:end`` of ``text`` (a run of whole lines): the offset of the
    line before them, that line, and the line after them."""
    prev_start = text.rfind("\n", 0, max(start - 1, 0)) + 1 if start > 0 else 0
    next_end = text.find("\n", end)
    next_end = len(text) if next_end < 0 else next_end + 1
    return prev_start, text[prev_start:start], text[end:next_end]


def byte_to_char(text: str, position: int) -> int:
    """The code-point offset of UTF-8 byte ``position`` of ``text`` (Y.Text positions are bytes)."""
    if text.isascii():
        return position
    return len(text.encode()[:position].decode(errors="ignore"))


def line_span(text: str, lines: tuple[int, int] | None) -> tuple[int, int]:
    """Code points of 1-based inclusive ``lines`` in ``text`` (None: the whole text)."""
    if lines is None:
        return 0, len(text)
    first, last = lines
    start = 0
    for _ in range(first - 1):
        found = text.find("\n", start)
        if found < 0:
            return len(text), len(text)
        start = found + 1
    end = start
    for _ in range(last - first + 1):
        found = text.find("\n", end)
        if found < 0:
            return start, len(text)
        end = found + 1
    return start, end


def _nearest(text: str, key: str, at: int) -> int | None:
    """Where ``key`` occurs in ``text`` nearest to ``at`` (None: nowhere)."""
    ahead = text.find(key, max(at, 0))
    behind = text.rfind(key, 0, max(at, 0) + len(key))
    found = [place for place in (ahead, behind) if place >= 0]
    if not found:
        return None
    return min(found, key=lambda place: abs(place - at))


def undo_landed(landed: Landed, files: Map[Any], name: str, origin: str) -> bool:
    """Undo ``landed`` alone, or raise ``ReviewRefused`` having changed nothing. ``name``
    names the block in messages ("hunk 2 of app.py"). Returns whether it was taken back as
    text (``_merge_back``, under ``origin``) rather than through its undo history."""
    ytext = files.get(landed.path)
    if not isinstance(ytext, Text):
        raise ReviewRefused(f"{name} cannot be undone: {landed.path} was deleted since", conflict=True)
    now = str(ytext)
    found = _nearest(now, landed.key, landed.at)
    if found is None:
        if not _merge_back(landed, ytext, now, origin):
            raise ReviewRefused(
                f"{name} cannot be undone: the lines it wrote in {landed.path}, or the lines beside them, were "
                "changed since it applied (by a person or a later block), and its change cannot be taken out "
                "without touching theirs. Change those lines by hand, or revert the whole turn",
                conflict=True,
            )
        return True
    start = found + len(landed.before)
    end = start + len(landed.text)
    if landed.change is not None:
        undo = UndoManager(scopes=[files], capture_timeout_millis=0, undo_stack=[landed.change])
        undo.undo()
        later = files.get(landed.path)
        result = str(later) if isinstance(later, Text) else ""
        tail = len(now) - end
        rest = len(result) - tail
        kept_around = rest >= start and result[:start] == now[:start] and result[rest:] == now[end:]
        if result == now or not kept_around:
            undo.redo()  # it reached beyond the block's lines: put everything back as it was
            raise ReviewRefused(
                f"{name} cannot be undone on its own: its changes in {landed.path} are tangled with later ones "
                "(revert the whole turn instead)",
                conflict=True,
            )
    if landed.created:
        ytext = files.get(landed.path)
        if isinstance(ytext, Text) and len(ytext) == 0:
            doc = ytext.doc
            with doc.transaction(origin=landed.file_origin):
                del files[landed.path]
    return False


# The most text between the lines beside a block that a merge reads (past it: refused).
MERGE_WINDOW_CHARS = 200_000


def _merge_back(landed: Landed, ytext: Text, now: str, origin: str) -> bool:
    """The block's lines were changed since: take its change back out of them as text, with
    the three-way take-back (``threeway.take_back``) between the line before and the line
    after it, when the lines it changed and those beside them were left alone (a person's
    edit of a line it kept, say). False, changing nothing, when they were not, or when its
    old text or the lines around it are not known any more."""
    if landed.old is None:
        return False
    start = 0
    if landed.before:
        found = _nearest(now, landed.before, landed.at)
        if found is None:
            return False
        start = found
    end = len(now)
    if landed.after:
        found = now.find(landed.after, start + len(landed.before))
        if found < 0:
            return False
        end = found + len(landed.after)
    if end - start > MERGE_WINDOW_CHARS:
        return False
    window = now[start:end]
    taken = take_back(landed.before + landed.old + landed.after, landed.key, window)
    if taken is None or taken == window:
        return False
    same = 0
    limit = min(len(window), len(taken))
    while same < limit and window[same] == taken[same]:
        same += 1
    tail = 0
    while tail < limit - same and window[-1 - tail] == taken[-1 - tail]:
        tail += 1
    at = utf8_length(now[: start + same])
    gone = utf8_length(window[same : len(window) - tail])
    with ytext.doc.transaction(origin=origin):
        if gone:
            del ytext[at : at + gone]
        if len(taken) - tail > same:
            ytext.insert(at, taken[same : len(taken) - tail])
    return True
