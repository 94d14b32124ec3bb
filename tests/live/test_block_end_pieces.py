"""``watch_gate.block_end_pieces``: how a delta of many lines goes into the document with the
watchdog on. The lines between lines that may end a block go in together (one transaction);
each line that may end one goes in alone, after everything before it."""

from __future__ import annotations

import random

from spark_ide.editing.grammar import BLOCK_END_CHARS, may_end_a_block
from spark_ide.live.watch_gate import block_end_pieces


def test_the_lines_between_block_ends_go_in_together() -> None:
    text = "x = 1\ny = 2\n</write>\nDone.\nMore.\n```\nz = 3"
    assert block_end_pieces("", text) == ["x = 1\ny = 2\n", "</write>\n", "Done.\nMore.\n", "```\n", "z = 3"]


def test_a_delta_with_no_block_end_is_one_piece() -> None:
    text = "".join(f"def f{n}():\n    return {n}\n" for n in range(100))
    assert block_end_pieces("", text) == [text]


def test_a_marker_cut_in_two_by_the_delta_before_makes_the_first_line_a_piece() -> None:
    first, second = "    return 1\n<", "/write>\nDone.\nAnd more.\n"
    assert block_end_pieces(first[-BLOCK_END_CHARS:], second) == ["/write>\n", "Done.\nAnd more.\n"]
    assert block_end_pieces("", second) == [second]  # without the tail nothing shows an end


def test_the_pieces_are_the_delta_and_every_possible_end_stands_alone() -> None:
    rng = random.Random(7)
    lines = ["a = 1\n", "</edit>\n", "```\n", "prose here\n", "", ">>>>>>> REPLACE\n", "b\n", "</"]
    for _ in range(500):
        text = "".join(rng.choice(lines) for _ in range(rng.randrange(0, 12)))
        pieces = block_end_pieces("", text)
        assert "".join(pieces) == text and all(pieces)
        for piece in pieces:
            if may_end_a_block(piece):
                assert len(piece.splitlines()) == 1  # a line that may end a block is alone
