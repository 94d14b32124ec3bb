"""Find where an `old_text` sits in a file: exact, then whitespace-insensitive, then fuzzy.

A match must be unique. When several places match equally well the model's line hint
picks the nearest one; if that still leaves a tie the block fails as ambiguous, listing
the candidates so the model can be told where to look.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rapidfuzz import fuzz, process

from spark_ide.editing.lines import normalize, split_lines, split_lines_keeping_ends
from spark_ide.editing.reasons import FailureReason

FUZZY_LINE_SCORE = 80.0  # rapidfuzz ratio for one line to count as matching
FUZZY_LINE_SHARE = 0.8  # share of old_text lines that must match
MAX_CANDIDATES = 1000  # more occurrences than this add no information
REPORTED_CANDIDATES = 5
FUZZY_PROBES = 8  # old lines that vote for candidate windows
FUZZY_WINDOWS = 16  # most-voted windows scored line by line


class MatchStrategy(StrEnum):
    EXACT = "exact"
    WHITESPACE = "whitespace"
    FUZZY = "fuzzy"
    # A V4A hunk's levels after exact (v4a_match.py).
    TRAILING_SPACE = "trailing_space"
    TRIMMED = "trimmed"
    UNICODE = "unicode"


@dataclass(frozen=True, slots=True)
class Region:
    """The located lines as they are in the file (with their newlines)."""

    first_line: int  # 0-based
    lines: tuple[str, ...]
    offset: int  # code-point offset of the region in the searched text
    strategy: MatchStrategy

    @property
    def line_range(self) -> tuple[int, int]:
        """1-based inclusive line numbers, for people and for the model."""
        return self.first_line + 1, self.first_line + max(len(self.lines), 1)


@dataclass(frozen=True, slots=True)
class LocateFailure:
    reason: FailureReason
    candidates: tuple[int, ...]  # 1-based first lines of the competing places


def locate(text: str, old_text: str, line_hint: int | None = None) -> Region | LocateFailure:
    """Locate `old_text` (whole lines) in `text`."""
    if not old_text.strip():
        return LocateFailure(FailureReason.EMPTY_OLD_TEXT, ())
    needle = old_text if old_text.endswith("\n") else old_text + "\n"
    exact = exact_line_starts(text, needle)
    if exact:
        return _choose(text, exact, needle, line_hint)
    doc_lines = split_lines(text)
    old_lines = split_lines(old_text)
    doc_norm = [normalize(line) for line in doc_lines]
    old_norm = [normalize(line) for line in old_lines]
    loose = whitespace_starts(doc_norm, old_norm)
    if loose:
        return _choose_line(
            text, doc_lines, loose, len(old_lines), line_hint, MatchStrategy.WHITESPACE
        )
    scores = _fuzzy_scores(doc_norm, old_norm)
    needed = math.ceil(FUZZY_LINE_SHARE * len(old_lines))
    qualified = {start: score for start, (count, score) in scores.items() if count >= needed}
    if not qualified:
        closest = sorted(scores, key=lambda start: scores[start], reverse=True)
        return LocateFailure(FailureReason.NO_MATCH, _report(closest))
    best = max(qualified.values())
    tied = sorted(start for start, score in qualified.items() if score == best)
    return _choose_line(text, doc_lines, tied, len(old_lines), line_hint, MatchStrategy.FUZZY)


# The helpers below search the text in place: copying a large file (to frame it with
# newlines, say) costs more than the search itself.


def lines_at(text: str, needle: str, position: int) -> bool:
    """Whether the whole lines `needle` (ending with a newline) sit at `position`; the
    file's last line may lack its newline."""
    if text.startswith(needle, position):
        return True
    return (
        len(needle) > 1
        and not text.endswith("\n")
        and position + len(needle) - 1 == len(text)
        and text.endswith(needle[:-1])
    )


def exact_line_starts(text: str, needle: str, limit: int = MAX_CANDIDATES) -> list[int]:
    """Ascending offsets where `needle` (whole lines, ending with a newline) starts a line."""
    starts = [0] if lines_at(text, needle, 0) else []
    probe = "\n" + needle
    position = text.find(probe)
    while position >= 0 and len(starts) < limit:
        starts.append(position + 1)
        position = text.find(probe, position + 1)
    last = len(text) - len(needle) + 1  # where a match missing its final newline starts
    if (
        len(starts) < limit
        and last > 0
        and text[last - 1] == "\n"
        and not text.endswith("\n")
        and lines_at(text, needle, last)
    ):
        starts.append(last)
    return starts


def line_numbers(text: str, offsets: Sequence[int]) -> list[int]:
    """0-based line index of each (ascending) offset, counting newlines only once."""
    numbers: list[int] = []
    line = 0
    previous = 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        previous = offset
        numbers.append(line)
    return numbers


def whitespace_starts(doc_norm: list[str], old_norm: list[str]) -> list[int]:
    """First line indices where the normalized lines match the normalized old lines."""
    span = len(old_norm)
    first = old_norm[0]
    return [
        start
        for start in range(len(doc_norm) - span + 1)
        if doc_norm[start] == first and doc_norm[start : start + span] == old_norm
    ][:MAX_CANDIDATES]


def _fuzzy_scores(doc_norm: list[str], old_norm: list[str]) -> dict[int, tuple[int, float]]:
    """Per candidate window start: how many old lines match fuzzily there, and their total.

    Scoring every window against every old line costs file x old_text comparisons, too
    much on the hot path for a large old_text; so a few distinctive (long) old lines vote
    for window starts first, and only the most-voted windows are scored line by line.
    """
    last_start = len(doc_norm) - len(old_norm)
    if last_start < 0:
        return {}
    probes = sorted(
        (row for row, line in enumerate(old_norm) if line), key=lambda row: -len(old_norm[row])
    )[:FUZZY_PROBES]
    votes: Counter[int] = Counter()
    for offset in probes:
        hits = process.extract(
            old_norm[offset],
            doc_norm,
            scorer=fuzz.ratio,
            score_cutoff=FUZZY_LINE_SCORE,
            limit=None,
        )
        for _, _, row in hits:
            if 0 <= row - offset <= last_start:
                votes[row - offset] += 1
    windows = [start for start, _ in votes.most_common(FUZZY_WINDOWS)]
    return {start: _window_score(doc_norm, old_norm, start) for start in windows}


def _window_score(doc_norm: list[str], old_norm: list[str], start: int) -> tuple[int, float]:
    matched, total = 0, 0.0
    for offset, old_line in enumerate(old_norm):
        score = fuzz.ratio(old_line, doc_norm[start + offset])  # two blank lines: 100
        if score >= FUZZY_LINE_SCORE:
            matched += 1
            total += score
    return matched, total


def _report(starts: Sequence[int]) -> tuple[int, ...]:
    return tuple(start + 1 for start in starts[:REPORTED_CANDIDATES])


def _pick(starts: Sequence[int], line_hint: int | None) -> int | None:
    """The unique start, or the unique one nearest the 1-based hint."""
    if len(starts) == 1:
        return starts[0]
    if line_hint is None:
        return None
    distances = sorted((abs(start + 1 - line_hint), start) for start in starts)
    if distances[0][0] == distances[1][0]:
        return None
    return distances[0][1]


def _choose(
    text: str, offsets: list[int], needle: str, line_hint: int | None
) -> Region | LocateFailure:
    starts = line_numbers(text, offsets)
    chosen = _pick(starts, line_hint)
    if chosen is None:
        return LocateFailure(FailureReason.AMBIGUOUS_MATCH, _report(starts))
    offset = offsets[starts.index(chosen)]
    lines = split_lines_keeping_ends(text[offset : offset + len(needle)])
    return Region(chosen, tuple(lines), offset, MatchStrategy.EXACT)


def _choose_line(
    text: str,
    doc_lines: list[str],
    starts: list[int],
    span: int,
    line_hint: int | None,
    strategy: MatchStrategy,
) -> Region | LocateFailure:
    chosen = _pick(starts, line_hint)
    if chosen is None:
        return LocateFailure(FailureReason.AMBIGUOUS_MATCH, _report(starts))
    offset = sum(map(len, doc_lines[:chosen])) + chosen
    ends_with_newline = text.endswith("\n")
    lines = tuple(
        doc_lines[row] + ("\n" if row < len(doc_lines) - 1 or ends_with_newline else "")
        for row in range(chosen, chosen + span)
    )
    return Region(chosen, lines, offset, strategy)
