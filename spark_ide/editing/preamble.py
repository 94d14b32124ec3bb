"""Prose lines that may lead into an edit block, held until the next line tells.

Models introduce a block with lines that are not prose for a reader: the file's path on
the line before a SEARCH/REPLACE block, and a Markdown fence opening around any block.
The parser holds such lines (and blank lines after them) until a later line shows
whether a block follows. If one does, the block takes what belongs to it; if not, the
lines are released as prose, unchanged and in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, auto

from spark_ide.editing.grammar import FENCE_MARKER, MAX_TAG_LENGTH

MAX_HELD_LINE = MAX_TAG_LENGTH  # longer lines are never a path or a fence: holding stays bounded
# Whitespace as ``str.isspace`` says (``re``'s ``\s`` on text is the same test), found in one
# C-level scan: every prose line start asks, and a generator over its characters cost more
# than the rest of the line's parsing.
_SPACE = re.compile(r"\s")


class LineKind(Enum):
    BLANK = auto()
    FENCE = auto()  # a Markdown code fence line: ``` and an optional info string
    PATH = auto()  # one word, maybe in backticks or bold, maybe with a colon: a file path
    OTHER = auto()


@dataclass(frozen=True, slots=True)
class HeldLine:
    text: str  # as it arrived, with its newline
    kind: LineKind


def classify(line: str) -> LineKind:
    """What a complete line (without its newline) may be."""
    if len(line) > MAX_HELD_LINE:
        return LineKind.OTHER
    stripped = line.strip()
    if not stripped:
        return LineKind.BLANK
    if stripped.startswith(FENCE_MARKER):
        return LineKind.FENCE
    return LineKind.PATH if path_in_line(line) is not None else LineKind.OTHER


def is_blank(line: str) -> bool:
    """The line (or what came of it so far) is blanks only, and `classify` agrees."""
    return len(line) <= MAX_HELD_LINE and not line.strip()


def may_hold(partial: str) -> bool:
    """Whether a line still being written may turn out to be held (so it must wait).

    True for every prefix of a line `classify` does not call OTHER, so the verdict never
    depends on where a chunk ended: blanks, a backtick start, or a single word so far.
    """
    if len(partial) > MAX_HELD_LINE:
        return False
    stripped = partial.strip()
    return not stripped or stripped.startswith("`") or _SPACE.search(stripped) is None


def path_in_line(line: str) -> str | None:
    """The path a line names on its own (`src/app.py`, **app.py**:), if it is one word."""
    candidate = line.strip().strip("`*").rstrip(":").strip("`*")
    if not candidate or _SPACE.search(candidate) is not None:
        return None
    return candidate


def fence_language(line: str) -> str | None:
    """The language of a fence opening (```python -> python), if it names one."""
    info = line.strip().lstrip("`").strip()
    word = info.split()[0].strip("{}.").lower() if info else ""
    return word or None


class Preamble:
    """The held lines: at most one path line and one fence line, with blanks after them."""

    def __init__(self) -> None:
        self._lines: list[HeldLine] = []

    @property
    def empty(self) -> bool:
        """Nothing is held."""
        return not self._lines

    @property
    def fence(self) -> HeldLine | None:
        return next((line for line in self._lines if line.kind is LineKind.FENCE), None)

    @property
    def ends_with_fence(self) -> bool:
        """The last line held that is not blank is a fence."""
        kinds = [line.kind for line in self._lines if line.kind is not LineKind.BLANK]
        return bool(kinds) and kinds[-1] is LineKind.FENCE

    def hold(self, text: str, kind: LineKind) -> str:
        """Hold a line that is not OTHER; returns what it pushes out as prose."""
        if kind is LineKind.BLANK:
            if not self._lines:
                return text
            self._lines.append(HeldLine(text, kind))
            return ""
        released = ""
        same = [at for at, line in enumerate(self._lines) if line.kind is kind]
        if same:  # a second path (or fence): the first one led into nothing
            cut = same[-1] + 1
            while cut < len(self._lines) and self._lines[cut].kind is LineKind.BLANK:
                cut += 1
            released = "".join(line.text for line in self._lines[:cut])
            del self._lines[:cut]
        self._lines.append(HeldLine(text, kind))
        return released

    def release(self) -> str:
        """Nothing followed: everything held is prose."""
        if not self._lines:  # every prose line start asks: most hold nothing
            return ""
        text = "".join(line.text for line in self._lines)
        self._lines = []
        return text

    def take_for_search(self) -> tuple[str | None, bool]:
        """A SEARCH marker follows: the path it names, and whether a fence wraps it.

        All held lines belong to the block.
        """
        paths = [path_in_line(line.text) for line in self._lines if line.kind is LineKind.PATH]
        wrapped = self.fence is not None
        self._lines = []
        return (paths[0] if paths else None), wrapped

    def take_for_tag(self) -> tuple[str, bool]:
        """An <edit> or <write> tag follows: the prose to show before it, and whether a
        fence wraps it. The fence and the blanks right after it belong to the block."""
        lines = self._lines
        self._lines = []
        at = next((at for at, line in enumerate(lines) if line.kind is LineKind.FENCE), None)
        if at is None:
            return "".join(line.text for line in lines), False
        rest = at + 1
        while rest < len(lines) and lines[rest].kind is LineKind.BLANK:
            rest += 1
        return "".join(line.text for line in lines[:at] + lines[rest:]), True

    def take_for_fence_write(self) -> tuple[str, HeldLine, str]:
        """The held fence opens a file (a small model's answer): the prose before it, the
        fence, and the blank lines after it (the file's first lines). Only when
        `ends_with_fence`."""
        lines = self._lines
        self._lines = []
        at = max(at for at, line in enumerate(lines) if line.kind is LineKind.FENCE)
        before = "".join(line.text for line in lines[:at])
        return before, lines[at], "".join(line.text for line in lines[at + 1 :])
