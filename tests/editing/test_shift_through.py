"""``runner.shift_through``: a byte position carried through a Y.Text delta, the one rule the
turn's regions, a hunk's file cursor (``hunk.FileCursor``) and a steering edit's lines share."""

from __future__ import annotations

from typing import Any

from spark_ide.editing.hunk import FileCursor
from spark_ide.editing.runner import shift_through


def test_text_inserted_right_at_the_position_pushes_it_unless_told_not_to() -> None:
    at: list[dict[str, Any]] = [{"retain": 10}, {"insert": "ab"}]
    assert shift_through(10, at) == 12
    assert shift_through(10, at, pushed_at=False) == 10  # typed right at it: it stays after
    before: list[dict[str, Any]] = [{"retain": 4}, {"insert": "é"}, {"retain": 3}, {"delete": 2}]  # é: two bytes
    assert shift_through(10, before) == shift_through(10, before, pushed_at=False) == 10
    assert shift_through(10, [{"retain": 8}, {"delete": 5}], pushed_at=False) == 8  # its place deleted
    assert shift_through(10, [{"retain": 11}, {"insert": "x"}], pushed_at=False) == 10  # after it: no change


def test_a_hunk_s_file_cursor_follows_other_people_s_edits() -> None:
    cursor = FileCursor()
    cursor.position = 10
    cursor.on_delta([{"retain": 10}, {"insert": "typed"}])
    assert cursor.position == 10
    cursor.on_delta([{"insert": "top\n"}])
    assert cursor.position == 14
