"""A patch hunk that found nothing in a file someone else changed since the model last saw it:
what the call's output tells the model (``changed_under``), so it writes the hunk again
against the file as it is rather than guessing.

The place shown is where the hunk went in the text the model saw (its ``@@`` lines, then its
old lines after them, searched as the patch engine does), carried over to the file now
through a line diff of the two; when it went nowhere there either, the first place the two
differ. At most ``EXCERPT_LINES`` lines of the file as it is now, each cut at
``LINE_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from spark_ide.editing.v4a_match import seek

EXCERPT_LINES = 12
AROUND = 2  # lines shown before and after the place
LINE_CHARS = 200


def _lines(text: str) -> list[str]:
    """``text``'s lines without their line ends (a CRLF line loses its "\\r" too)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _carried(matcher: SequenceMatcher[str], start: int, end: int, size: int) -> tuple[int, int]:
    """Lines ``start:end`` of the first text, as lines of the second (a changed line goes to
    the lines that replaced it; ``size``: how many lines the second has)."""
    first, last = size, 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i1 <= start < i2:
            first = j1 + (start - i1) if tag == "equal" else j1
        if i1 < end <= i2:
            last = j1 + (end - i1) if tag == "equal" else j2
    return first, max(first, last)


def _first_difference(matcher: SequenceMatcher[str]) -> tuple[int, int] | None:
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            return j1, j2
    return None


def _place(was: list[str], anchors: Sequence[str], old: Sequence[str]) -> tuple[int, int] | None:
    """Where a hunk with ``anchors`` (its ``@@`` lines) and ``old`` lines goes in ``was``, as
    the patch engine searches (hunk.py): each anchor after the one before, the old lines after
    the last anchor; None when it does not go there either."""
    start, first = 0, None
    for anchor in anchors:
        found = seek(was, [anchor], start)
        if found is None:
            return None
        first = found.line if first is None else first
        start = found.line + 1
    if old:
        found = seek(was, list(old), start)
        if found is None:
            return None
        return (found.line if first is None else first), found.line + len(old)
    return None if first is None else (first, start)


def changed_under(path: str, seen: str, now: str, anchors: Sequence[str], old: Sequence[str]) -> str:
    """What to tell the model of ``path``: someone else changed it since it saw ``seen``, and
    the lines of ``now`` where a hunk with ``anchors`` and ``old`` lines went in ``seen``."""
    was, lines = _lines(seen), _lines(now)
    matcher = SequenceMatcher(None, was, lines, autojunk=False)
    place = _place(was, anchors, old)
    if place is not None:
        start, end = _carried(matcher, *place, len(lines))
        where = "where the lines your hunk expects were when you last saw it"
    else:
        difference = _first_difference(matcher)
        start, end = difference if difference is not None else (0, 0)
        where = "where it was changed first"
    head = f"{path} was changed by someone else since you last saw it (not by you)."
    if not lines:
        return f"{head} It is empty now."
    first = max(0, min(start, len(lines) - 1) - AROUND)
    last = min(len(lines), max(end, start + 1) + AROUND, first + EXCERPT_LINES)
    shown = "\n".join(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "\u2026" for line in lines[first:last])
    return (
        f"{head} Its lines {first + 1}-{last} now read ({where}):\n```\n{shown}\n```\n"
        "Write the hunk again against these lines."
    )
