"""Taking one change back out of a text that changed since (``editing.threeway``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing.threeway import take_back

BEFORE = "import os\n\ndef a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 3\n"
AFTER = BEFORE.replace("return 1", "return 10")  # the change: in a()


def test_an_untouched_text_goes_back_to_before() -> None:
    assert take_back(BEFORE, AFTER, AFTER) == BEFORE


def test_edits_elsewhere_stay_and_the_change_goes() -> None:
    now = AFTER.replace("return 3", "return 30") + "\ndef d():\n    return 4\n"
    assert take_back(BEFORE, AFTER, now) == BEFORE.replace("return 3", "return 30") + "\ndef d():\n    return 4\n"


def test_lines_inserted_above_the_change_stay() -> None:
    now = "# header\n" + AFTER
    assert take_back(BEFORE, AFTER, now) == "# header\n" + BEFORE


def test_an_edit_of_the_changed_lines_is_a_clash() -> None:
    assert take_back(BEFORE, AFTER, AFTER.replace("return 10", "return 11")) is None


def test_an_edit_right_beside_the_change_is_a_clash() -> None:
    now = AFTER.replace("def a():\n", "def a(x):\n")  # the line just above the changed one
    assert take_back(BEFORE, AFTER, now) is None


def test_a_change_that_created_the_text_and_nothing_since_gives_it_back_empty() -> None:
    assert take_back("", "NEW = 1\n", "NEW = 1\n") == ""


def test_the_same_edit_made_again_since_is_not_a_clash() -> None:
    # Someone made the very change the turn made (identical hunks): taking it back once is fine.
    assert take_back(BEFORE, AFTER, AFTER) == BEFORE


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n", "\n", "x = 1\n"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(base=LINES, head=LINES, tail=LINES, old=LINES, new=LINES)
def test_a_change_in_the_middle_comes_back_out_whatever_was_added_far_from_it(
    base: list[str], head: list[str], tail: list[str], old: list[str], new: list[str]
) -> None:
    before = "".join([*base, "# start\n", *old, "# end\n", *base])
    after = "".join([*base, "# start\n", *new, "# end\n", *base])
    now = "".join(head) + "# top\n" + after + "# bottom\n" + "".join(tail)
    taken = take_back(before, after, now)
    if taken is not None:  # None only when the diff cannot place it (repeated lines)
        assert taken == "".join(head) + "# top\n" + before + "# bottom\n" + "".join(tail)
    assert take_back(before, after, after) == before
