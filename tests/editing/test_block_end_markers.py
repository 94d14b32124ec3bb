"""``grammar.may_end_a_block``: what the Pilot's watch gate looks for before it applies a delta
of several lines whole (``live.watch_gate``)."""

from __future__ import annotations

import pytest

from spark_ide.editing.grammar import (
    BLOCK_END_CHARS,
    BLOCK_END_MARKERS,
    FENCE_MARKER,
    REPLACE_MARKER,
    may_end_a_block,
)

CLOSERS = ("</old_text>", "</new_text>", "</write>", "</edit>", FENCE_MARKER, REPLACE_MARKER)


@pytest.mark.parametrize("closer", CLOSERS)
def test_every_line_that_ends_a_block_holds_a_marker(closer: str) -> None:
    assert may_end_a_block(f"x = 1\n{closer}\nDone.\n")


@pytest.mark.parametrize("marker", BLOCK_END_MARKERS)
def test_a_marker_cut_between_two_deltas_is_seen_with_the_end_of_the_first(marker: str) -> None:
    for cut in range(1, len(marker)):
        first, second = f"y = 2\n{marker[:cut]}", f"{marker[cut:]} and more\n"
        assert not may_end_a_block(second)  # alone, the second delta does not show it
        assert may_end_a_block(first[-BLOCK_END_CHARS:] + second)


def test_code_and_prose_without_a_marker_end_nothing() -> None:
    assert not may_end_a_block("x = 1\nif a < b and c > d:\n    y = '>>' + '=='\n")
