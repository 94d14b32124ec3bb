"""Where a V4A hunk goes: a forward search from a cursor, with the V4A line matching rules.

A hunk's old lines (context and `-` lines) are searched from the file's cursor on: first
exactly, then ignoring trailing whitespace, then ignoring whitespace at both ends, then also
with Unicode dashes, quotes and spaces read as their ASCII kin; the first level that matches
anywhere wins, and at that level the first place. A hunk that ends with `*** End of File`
is tried at the very end of the file first. No line numbers, no uniqueness: the cursor, moved
past each `@@` anchor line and each applied hunk, is what tells repeated code apart.

Lines here are without their line end ("\\n", and the "\\r" of a CRLF file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spark_ide.editing.locator import MatchStrategy

LEVELS = (MatchStrategy.EXACT, MatchStrategy.TRAILING_SPACE, MatchStrategy.TRIMMED, MatchStrategy.UNICODE)
_SHOWN_CHARS = 120  # a line quoted in a message, at most

_ASCII = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


def fold(line: str, level: MatchStrategy) -> str:
    """``line`` as the matching ``level`` compares it."""
    if level is MatchStrategy.EXACT:
        return line
    if level is MatchStrategy.TRAILING_SPACE:
        return line.rstrip()
    if level is MatchStrategy.TRIMMED:
        return line.strip()
    return line.translate(_ASCII).strip()


def matches_at(lines: Sequence[str], pattern: Sequence[str], at: int, level: MatchStrategy) -> bool:
    if at < 0 or at + len(pattern) > len(lines):
        return False
    return all(fold(lines[at + row], level) == fold(old, level) for row, old in enumerate(pattern))


@dataclass(frozen=True, slots=True)
class Found:
    line: int  # 0-based first line
    level: MatchStrategy


def seek(lines: Sequence[str], pattern: Sequence[str], start: int, *, end_of_file: bool = False) -> Found | None:
    """The first place at or after line ``start`` where ``pattern`` (not empty) matches."""
    if end_of_file:
        end = len(lines) - len(pattern)
        if end >= start:
            for level in LEVELS:
                if matches_at(lines, pattern, end, level):
                    return Found(end, level)
    for level in LEVELS:
        at = _first(lines, pattern, start, level)
        if at is not None:
            return Found(at, level)
    return None


def _first(lines: Sequence[str], pattern: Sequence[str], start: int, level: MatchStrategy) -> int | None:
    if level is MatchStrategy.EXACT:
        haystack = lines if isinstance(lines, list) else list(lines)
        offset = 0
    else:  # folded once, from the cursor on
        haystack = [fold(line, level) for line in lines[start:]]
        offset, start = start, 0
    wanted = [fold(old, level) for old in pattern]
    first, span = wanted[0], len(wanted)
    last = len(haystack) - span
    at = start
    while at <= last:
        try:
            at = haystack.index(first, at, last + 1)
        except ValueError:
            return None
        if haystack[at : at + span] == wanted:
            return at + offset
        at += 1
    return None


def shown(line: str) -> str:
    """A line as a message quotes it."""
    return repr(line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + "\u2026")


def describe_miss(lines: Sequence[str], pattern: Sequence[str], start: int, path: str) -> str:
    """Why ``pattern`` is not found from line ``start`` on: its first old line that matches
    nowhere after the ones before it (compared at the loosest level)."""
    loosest = LEVELS[-1]
    folded = [fold(line, loosest) for line in lines]
    wanted = [fold(old, loosest) for old in pattern]
    best, best_at = 0, -1
    for at in range(start, len(folded)):
        if folded[at] != wanted[0]:
            continue
        length = 1
        while length < len(wanted) and at + length < len(folded) and folded[at + length] == wanted[length]:
            length += 1
        if length > best:
            best, best_at = length, at
    where = f"in {path} from line {start + 1} on"
    if best == 0:
        return f"its first old line {shown(pattern[0])} is not {where}"
    found = lines[best_at + best] if best_at + best < len(lines) else None
    there = f"the file has {shown(found)} there" if found is not None else "the file ends there"
    return (
        f"its old lines 1-{best} match at line {best_at + 1}, but old line {best + 1} {shown(pattern[best])} "
        f"does not follow them ({there}); searched {where}"
    )
