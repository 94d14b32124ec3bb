"""The repetition stop: a looping answer is caught, ordinary code and prose are not."""

from __future__ import annotations

import pytest

from spark_ide.live.repetition import RepetitionGuard


def looping_at(text: str, chunk: int = 7) -> int | None:
    """The offset at which the guard says the answer loops, or None."""
    guard = RepetitionGuard()
    for at in range(0, len(text), chunk):
        if guard.feed(text[at : at + chunk]):
            return at
    return None


def test_the_same_line_over_and_over_is_a_loop_caught_early() -> None:
    loop = "Turn 2a3ff0b1a1e6: no edit blocks.\n" * 40
    at = looping_at("Here is what I did.\n" + loop)
    assert at is not None and at < len(loop) // 4


def test_a_cycle_of_a_few_lines_is_a_loop() -> None:
    cycle = "Your edits so far:\n(none)\nBlocks marked applied are already in the files.\n"
    assert looping_at("Sure.\n" + cycle * 10) is not None


def test_a_fragment_looping_inside_one_line_is_a_loop() -> None:
    assert looping_at("The answer is " + "and then the model said " * 60) is not None


@pytest.mark.parametrize(
    "text",
    [
        "".join(f"value_{i} = {i} * {i}\n" for i in range(200)),  # a generated table
        "def f():\n    pass\n\n\n" * 3 + "}\n" * 20 + "\n" * 30,  # blank lines, braces
        "x = 1\n" * 12,  # short repeated lines
        "def is_prime(n):\n    if n < 2:\n        return False\n    for i in range(2, n):\n"
        "        if n % i == 0:\n            return False\n    return True\n",
    ],
    ids=["table", "blanks-and-braces", "short-lines", "code"],
)
def test_ordinary_answers_are_not_loops(text: str) -> None:
    assert looping_at(text) is None
