"""The lines a prompt at the cursor is about (``editing.enclosing``): the innermost function or
class in Python, the block by indentation elsewhere (and in Python that does not parse), the
cursor's own line outside any block; and a range kept within the file's lines."""

from __future__ import annotations

import pytest

from spark_ide.editing.enclosing import clamp_lines, enclosing_lines, line_count

PY = """\
import os

LIMIT = {
    "a": 1,
}


@cached
def top(x):
    y = x + 1

    return y


class Box:
    size = 3

    def grow(self, by):
        def inner():
            return by
        return inner()
"""
# lines: 1 import, 3-5 LIMIT, 8-12 top (its decorator on 8), 15-21 Box, 18-21 grow, 19-20 inner, 22 empty


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (10, (8, 12)),  # in a function: from its decorator to its last line
        (11, (8, 12)),  # a blank line inside it
        (8, (8, 12)),  # on its decorator
        (20, (19, 20)),  # the innermost definition
        (21, (18, 21)),  # in a method, outside the function nested in it
        (17, (15, 21)),  # in the class body, outside its methods
        (4, (3, 5)),  # a top-level statement over several lines
        (1, (1, 1)),  # a one-line statement
        (6, (6, 6)),  # a blank line between statements: the line alone
        (500, (22, 22)),  # past the end: the last line (empty, after the final line break)
    ],
)
def test_python_the_innermost_definition_or_statement(line: int, expected: tuple[int, int]) -> None:
    assert enclosing_lines(PY, line, python=True) == expected


JS = """\
const a = 1;

function f(x) {
  if (x) {
    return 1;
  }

  return 2;
}
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (5, (4, 6)),  # inside an if: the if, with its closing brace
        (8, (3, 9)),  # in the function's body
        (7, (3, 9)),  # a blank line in the body
        (3, (3, 9)),  # on the header: the block it heads
        (4, (4, 6)),
        (1, (1, 1)),  # top level: the line alone
        (2, (2, 2)),  # a blank line between top-level lines
        (10, (10, 10)),  # the empty last line
    ],
)
def test_other_languages_the_block_by_indentation(line: int, expected: tuple[int, int]) -> None:
    assert enclosing_lines(JS, line, python=False) == expected


def test_python_that_does_not_parse_falls_back_to_indentation() -> None:
    broken = "def f(x):\n    y = (x +\n    return y\n\nprint(1\n"
    assert enclosing_lines(broken, 3, python=True) == (1, 3)
    assert enclosing_lines(broken, 5, python=True) == (5, 5)


def test_tabs_count_as_indentation_and_ruby_end_closes() -> None:
    ruby = "def f\n\tputs 1\nend\nf\n"
    assert enclosing_lines(ruby, 2, python=False) == (1, 3)
    assert enclosing_lines("x = 1\nendpoint = 2\n", 2, python=False) == (2, 2)  # `endpoint` closes nothing


def test_clamping_keeps_a_range_within_the_lines() -> None:
    text = "a\nb\nc"  # 3 lines
    assert line_count(text) == 3 and line_count("") == 1 and line_count("a\n") == 2
    assert clamp_lines(text, 2, 3) == (2, 3)
    assert clamp_lines(text, 2, 90) == (2, 3)
    assert clamp_lines(text, 40, 90) == (3, 3)
    assert clamp_lines("", 5, 9) == (1, 1)
