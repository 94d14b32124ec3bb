from __future__ import annotations

from spark_ide.editing.tracker import COMMON_LINE_LIMIT, CandidateTracker

FILE = "def a():\n    return 1\n\ndef b():\n    return 1\n\ndef c():\n    return 3\n"


def test_it_reports_nothing_until_a_line_completes() -> None:
    tracker = CandidateTracker(FILE)
    assert tracker.feed("    ret") is False
    assert tracker.lines_seen == 0
    assert tracker.candidates() == []


def test_it_narrows_candidates_line_by_line() -> None:
    tracker = CandidateTracker(FILE)
    assert tracker.feed("    return 1\n") is True
    assert tracker.candidates() == [2, 5]
    tracker.feed("\nde")
    assert tracker.candidates() == [2, 5]
    tracker.feed("f c():\n")
    assert tracker.count() == 1
    assert tracker.candidates() == [5]


def test_it_falls_back_to_whitespace_insensitive_candidates() -> None:
    tracker = CandidateTracker(FILE)
    tracker.feed("def c():\n  return  3\n")
    assert tracker.count() == 1
    assert tracker.candidates() == [7]


def test_it_gives_up_when_nothing_matches_any_more() -> None:
    tracker = CandidateTracker(FILE)
    tracker.feed("def c():\nsomething else\n")
    assert tracker.count() == 0
    assert tracker.candidates() == []


def test_it_waits_for_a_second_line_when_the_first_is_too_common() -> None:
    text = "\n" * (COMMON_LINE_LIMIT + 5) + "unique\n" + "\n"
    tracker = CandidateTracker(text)
    tracker.feed("\n")
    assert tracker.count() is None
    tracker.feed("unique\n")
    assert tracker.count() == 1
    assert tracker.candidates() == [COMMON_LINE_LIMIT + 5]
