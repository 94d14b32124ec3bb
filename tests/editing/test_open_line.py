"""The line being written, kept in pieces: the same lines as a plain split, at the cost of
each delta (never a copy of the line so far)."""

from __future__ import annotations

import random

import pytest

from spark_ide.editing.lines import OpenLine


def test_it_hands_back_the_lines_a_delta_completes() -> None:
    line = OpenLine(tail_chars=4)
    assert line.feed("ab") == [] and line.length == 2 and line.tail(4) == "ab"
    assert line.feed("c\nde\n\nf") == ["abc", "de", ""]
    assert line.length == 1 and line.tail(4) == "f"
    assert line.take() == "f" and not line and line.tail(4) == ""


@pytest.mark.parametrize("seed", range(20))
def test_it_agrees_with_a_plain_split_and_keeps_the_end(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(rng.choice("ab\n" if seed % 2 else "abcdefgh") for _ in range(rng.randint(0, 5_000)))
    line, lines, at = OpenLine(tail_chars=50), [], 0
    reads = 1.0 if seed % 4 < 2 else 0.02  # the tail read at every delta, or now and then
    while at < len(text):
        delta = text[at : at + rng.choice((1, 3, 4, 60, 700))]
        at += len(delta)
        lines += line.feed(delta)
        current = text[: at].rsplit("\n", 1)[-1]
        assert line.length == len(current)
        if rng.random() < reads:
            assert line.tail(50) == current[-50:]
    lines.append(line.take())
    assert lines == text.split("\n")


def test_a_long_line_is_kept_in_few_pieces_and_a_short_tail() -> None:
    line = OpenLine(tail_chars=256)
    for _ in range(250_000):
        line.feed("abcd")
    assert line.length == 1_000_000
    assert len(line._parts) < 1_300  # joined now and then, each time only the newest pieces
    assert len(line._fresh) < OpenLine._FRESH  # the tail, never read, waits in few pieces
    assert len(line.kept) <= 512 and line.kept.endswith("abcd" * 64)
    assert line.feed("e\n") == ["abcd" * 250_000 + "e"]
