"""Which lines of a streamed chunk may interest a rule: one search per word over the whole chunk.

The rules' own cheap tests are regular expressions run on each line, and Python's regex engine tries every
alternative at every character (~0.1 µs a character per expression): on a stream of ordinary code they were most of
the watchdog's time. Before them, ``Words.lines`` looks for the words those expressions need with the ``in`` operator
and ``str.find`` over the whole chunk (a few tens of nanoseconds a word) and names the lines that hold one, with a
mark saying which rules' words they hold; only those lines go on to those rules' tests, which decide as before. The
words are what every match must contain, so no line a rule could fire on is skipped: a line without any of them is
one the tests would have let pass.
"""

from __future__ import annotations

from collections.abc import Iterable

# The marks: tier 1's words (a key's, a secret hint) and, from ``LANGUAGE_MARK`` up, a language's statement checker's.
KEY_MARK, HINT_MARK, LANGUAGE_MARK = 1, 2, 4

# A case-insensitive pattern also matches four characters beyond ASCII to ASCII letters (``re.IGNORECASE`` on str
# patterns: U+0130 and U+0131 match "i", U+017F matches "s", the Kelvin sign U+212A matches "k"). Mapped before
# lowering, so a lowered text holds every spelling of a word such a pattern would match, at the same positions (each
# maps to one character).
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


class Words:
    """Words looked for in a chunk: ``exact`` ones as written, ``anycase`` ones in any letter case; a line holding one
    gets its ``mark`` (a bit; ``a | b`` looks for the words of both, each line getting the marks of what it holds)."""

    __slots__ = ("anycase", "exact")

    def __init__(self, exact: Iterable[str] = (), anycase: Iterable[str] = (), *, mark: int = 1) -> None:
        self.exact = _fewest({word: mark for word in exact})
        self.anycase = _fewest({word.lower(): mark for word in anycase})

    def __or__(self, other: Words) -> Words:
        both = Words()
        both.exact = _fewest(_merged(self.exact, other.exact))
        both.anycase = _fewest(_merged(self.anycase, other.anycase))
        return both

    def lines(self, text: str) -> dict[int, int]:
        """The lines of ``text`` (split at "\\n", by index) holding at least one of the words, and their marks."""
        found: list[tuple[int, int]] = []  # (where, mark)
        _find(text, self.exact, found)
        if self.anycase:
            low = text.lower() if text.isascii() else text.translate(_FOLD).lower()
            _find(low, self.anycase, found)
        if not found:
            return {}
        if "\n" not in text:  # one line (most chunks of a stream): no counting
            marks = 0
            for _, mark in found:
                marks |= mark
            return {0: marks}
        found.sort()
        hits: dict[int, int] = {}
        line, counted = 0, 0
        for at, mark in found:  # the line of each hit, counting the line breaks once
            line += text.count("\n", counted, at)
            counted = at
            hits[line] = hits.get(line, 0) | mark
        return hits


def _find(text: str, words: tuple[tuple[str, int], ...], found: list[tuple[int, int]]) -> None:
    """Where the words occur in ``text`` (the first occurrence of each per line is enough)."""
    for word, mark in words:
        if word not in text:  # most words are in no line: the operator is the cheapest test there is
            continue
        at = text.find(word)
        while at >= 0:
            found.append((at, mark))
            end = text.find("\n", at)
            if end < 0:
                break
            at = text.find(word, end + 1)


def _merged(first: Iterable[tuple[str, int]], second: Iterable[tuple[str, int]]) -> dict[str, int]:
    marks: dict[str, int] = {}
    for word, mark in (*first, *second):
        marks[word] = marks.get(word, 0) | mark
    return marks


def _fewest(marks: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The words less those holding another with at least their marks ("execute" holds "exec": a line with it is
    found by "exec" and gets the marks it would have got)."""
    return tuple(
        (word, mark) for word, mark in sorted(marks.items())
        if not any(other != word and other in word and mark & ~marks[other] == 0 for other in marks)
    )
