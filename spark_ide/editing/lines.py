"""Line helpers shared by the locator and the applier.

Lines are split on "\\n" only (`str.splitlines` would also split on form feeds and
Unicode separators, which are ordinary characters inside source code).
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """Lines without terminators; a final newline does not start another line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def split_lines_keeping_ends(text: str) -> list[str]:
    """Lines with their "\\n" (the last one may lack it)."""
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()
    if last != "\n":
        lines.append(last[:-1])
    return lines


def normalize(line: str) -> str:
    """The line with indentation dropped and inner whitespace runs collapsed."""
    return " ".join(line.split())


def utf8_length(text: str) -> int:
    """Y.Text (pycrdt) counts positions in UTF-8 bytes, Python in code points."""
    return len(text) if text.isascii() else len(text.encode())


class OpenLine:
    """The line being written, delta by delta: what each delta costs is its own length, never
    the line's (a model writes paragraphs, minified JSON and literals of 10^6 characters as one
    line; a string grown with ``+=`` on an attribute is copied whole at every delta).

    ``feed`` keeps the line in pieces and hands back the lines a delta completes (joined once,
    at their end); ``kept`` is the line's last characters, a string trimmed now and then (all
    of the line up to ``tail_chars``, else ``tail_chars`` to twice that), ``tail`` the last
    ``chars`` of it, ``length`` the line's length so far. ``kept`` is made when it is read
    (the pieces since the last read joined onto it once): a reader that looks every few deltas
    does not pay for a copy of the tail at every delta.
    """

    __slots__ = ("_fresh", "_kept", "_loose", "_parts", "_tail_chars", "length")
    _COMPACT = 256  # pieces joined into one when this many have come (their own cost only)
    _FRESH = 64  # pieces since ``kept`` was last made, at most (then it is made unread)

    def __init__(self, tail_chars: int = 0) -> None:
        self._parts: list[str] = []
        self._loose = 0  # pieces at the end of _parts not joined yet
        self._kept = ""
        self._fresh: list[str] = []  # pieces not in _kept yet (only with tail_chars)
        self._tail_chars = tail_chars
        self.length = 0

    @property
    def kept(self) -> str:
        if self._fresh:
            self._take_fresh()
        return self._kept

    def _take_fresh(self) -> None:
        keep = self._tail_chars
        tail = self._kept + "".join(self._fresh)
        self._kept = tail[-keep:] if len(tail) > 2 * keep else tail
        self._fresh.clear()

    def __bool__(self) -> bool:
        return self.length > 0

    def feed(self, chunk: str) -> list[str]:
        """Take more text; the lines it completes, without their "\\n"."""
        if "\n" not in chunk:
            self._add(chunk)
            return []
        first, *rest = chunk.split("\n")
        if self._parts:
            self._parts.append(first)
            first = "".join(self._parts)
        last = rest.pop()
        self._clear()
        self._add(last)
        return [first, *rest]

    def take(self) -> str:
        """The unfinished line, whole; the line starts over empty."""
        line = "".join(self._parts)
        self._clear()
        return line

    def _clear(self) -> None:
        self._parts, self._loose, self._kept, self.length = [], 0, "", 0
        self._fresh.clear()

    def tail(self, chars: int) -> str:
        """The line's last ``chars`` characters (``chars`` at most ``tail_chars``)."""
        assert chars <= self._tail_chars
        return self.kept[-chars:] if chars else ""

    def _add(self, piece: str) -> None:
        if not piece:
            return
        parts = self._parts
        parts.append(piece)
        self.length += len(piece)
        self._loose += 1
        if self._loose == self._COMPACT:
            parts[-self._COMPACT :] = ["".join(parts[-self._COMPACT :])]
            self._loose = 0
        if self._tail_chars:
            fresh = self._fresh
            fresh.append(piece)
            if len(fresh) == self._FRESH:  # made unread now and then: few pieces wait
                self._take_fresh()
