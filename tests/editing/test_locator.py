from __future__ import annotations

import pytest

from spark_ide.editing import FailureReason, LocateFailure, MatchStrategy, Region, locate
from spark_ide.editing.locator import exact_line_starts, lines_at

FILE = "def a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 1\n"


def region(result: Region | LocateFailure) -> Region:
    assert isinstance(result, Region), result
    return result


def failure(result: Region | LocateFailure) -> LocateFailure:
    assert isinstance(result, LocateFailure), result
    return result


def test_it_finds_a_unique_exact_match() -> None:
    found = region(locate(FILE, "def b():\n    return 2\n"))
    assert found.first_line == 3
    assert found.lines == ("def b():\n", "    return 2\n")
    assert found.strategy is MatchStrategy.EXACT
    assert found.line_range == (4, 5)
    assert FILE[found.offset :].startswith("def b():")


def test_it_only_matches_whole_lines() -> None:
    assert failure(locate("prefix def b():\n", "def b():\n")).reason is FailureReason.NO_MATCH
    assert region(locate("xdef b():\n", "def b():\n")).strategy is MatchStrategy.FUZZY


def test_it_matches_the_last_line_without_a_trailing_newline() -> None:
    found = region(locate("one\ntwo", "two\n"))
    assert found.lines == ("two",)
    assert found.first_line == 1


def test_it_reports_an_ambiguous_match_with_candidates() -> None:
    result = failure(locate(FILE, "    return 1\n"))
    assert result.reason is FailureReason.AMBIGUOUS_MATCH
    assert result.candidates == (2, 8)


def test_it_breaks_a_tie_with_the_line_hint() -> None:
    assert region(locate(FILE, "    return 1\n", line_hint=7)).first_line == 7
    assert region(locate(FILE, "    return 1\n", line_hint=1)).first_line == 1


def test_it_stays_ambiguous_when_the_hint_is_equally_far_from_two_candidates() -> None:
    result = failure(locate(FILE, "    return 1\n", line_hint=5))
    assert result.reason is FailureReason.AMBIGUOUS_MATCH


def test_it_falls_back_to_ignoring_indentation_and_spacing() -> None:
    found = region(locate(FILE, "def b():\n  return   2\n"))
    assert found.strategy is MatchStrategy.WHITESPACE
    assert found.first_line == 3
    assert found.lines == ("def b():\n", "    return 2\n")


def test_it_falls_back_to_fuzzy_lines() -> None:
    text = "".join(f"line number {n} says hello\n" for n in range(40))
    old = "".join(f"line number {n} says hello\n" for n in range(10, 14))
    old = old.replace("says hello", "say hallo", 1) + "completely different line\n"
    found = region(locate(text, old))
    assert found.strategy is MatchStrategy.FUZZY
    assert found.first_line == 10
    assert len(found.lines) == 5


def test_it_rejects_a_fuzzy_match_below_the_line_share() -> None:
    text = "alpha beta gamma\ndelta epsilon\nzeta eta theta\n"
    old = "alpha beta gamma\nsomething else\nnothing alike\n"
    result = failure(locate(text, old))
    assert result.reason is FailureReason.NO_MATCH
    assert result.candidates == (1,)


def test_it_fails_on_empty_old_text() -> None:
    assert failure(locate(FILE, "")).reason is FailureReason.EMPTY_OLD_TEXT
    assert failure(locate(FILE, "\n  \n")).reason is FailureReason.EMPTY_OLD_TEXT


def test_it_fails_on_an_empty_file() -> None:
    assert failure(locate("", "x\n")).reason is FailureReason.NO_MATCH


def test_it_counts_unicode_offsets_in_code_points() -> None:
    text = "é🎉\nzwei\n"
    found = region(locate(text, "zwei\n"))
    assert found.offset == 3


def test_it_finds_a_long_slightly_wrong_old_text_fuzzily() -> None:
    text = "".join(f"    total_{n} = weigh(item_{n}, factor={n % 5})\n" for n in range(3000))
    old = "".join(f"    total_{n} = weigh(itm_{n}, factor={n % 5})\n" for n in range(1200, 1600))
    found = region(locate(text, old))
    assert found.strategy is MatchStrategy.FUZZY
    assert found.first_line == 1200
    assert len(found.lines) == 400


@pytest.mark.parametrize(
    ("text", "needle", "starts"),
    [
        ("a\nb\n", "b\n", [2]),
        ("a\nb", "b\n", [2]),
        ("b", "b\n", [0]),
        ("a\nb\n", "b\n\n", []),
        ("a\n", "\n", []),
        ("a\n\nb", "\n", [2]),
        ("xb\nb\n", "b\n", [3]),
        ("a\na\na", "a\na\n", [0, 2]),
    ],
)
def test_it_finds_whole_line_runs_in_place(text: str, needle: str, starts: list[int]) -> None:
    assert exact_line_starts(text, needle) == starts
    assert all(lines_at(text, needle, start) for start in starts)
