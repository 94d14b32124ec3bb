"""The repetition stop: a looping answer is caught, ordinary code and prose are not."""

from __future__ import annotations

import base64
import json
import random

import pytest

from spark_ide.live import repetition
from spark_ide.live.repetition import (
    CHECK_EVERY,
    LONG_LINE,
    MAX_FRAGMENT,
    MAX_PERIOD,
    MIN_CYCLE_CHARS,
    MIN_FRAGMENT,
    MIN_REPEATS,
    WINDOW,
    RepetitionGuard,
    inline_span,
)


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


# -- long lines: what models really write, and what it costs per delta -----------------------

WORDS = ("model", "writes", "a", "paragraph", "without", "newline", "and", "the", "guard", "reads",
         "every", "delta", "of", "it", "while", "people", "watch", "code", "land")


def prose_line(words: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def minified_json(rows: int) -> str:
    return json.dumps([{"id": i, "name": f"user{i}", "score": (i * 37) % 101, "tags": ["a", "b"][: i % 3]}
                       for i in range(rows)], separators=(",", ":"))


def base64_blob(size: int) -> str:
    rng = random.Random(7)
    data = bytearray(rng.randbytes(size))
    data[size // 2 : size // 2 + 120] = bytes(120)  # a run of zero bytes: 160 "A"s in base64
    return base64.b64encode(bytes(data)).decode()


@pytest.mark.parametrize(
    "text",
    [
        "Here it is.\n" + prose_line(4_000) + "\nDone.\n",
        "data = " + minified_json(600) + "\n",
        "BLOB = '" + base64_blob(30_000) + "'\n",
        "ZEROS = [" + ", ".join(["0"] * 60) + "]\n",  # a short run of equal items in a literal
        "TABLE = [" + ",".join(str(i * i % 97) for i in range(3_000)) + "]\n",
    ],
    ids=["prose-paragraph", "minified-json", "base64", "zeros", "numbers"],
)
def test_long_lines_that_do_not_loop_are_not_loops(text: str) -> None:
    assert looping_at(text, chunk=5) is None


def test_a_fragment_looping_at_the_end_of_a_long_line_is_caught() -> None:
    line = prose_line(2_000) + " " + "I will now repeat myself. " * 40
    at = looping_at(line, chunk=4)
    assert at is not None and at > len(line) - 40 * 26


def test_a_loop_of_a_few_long_lines_is_caught() -> None:
    block = prose_line(300, seed=3) + "\n" + prose_line(250, seed=4) + "\n"
    assert looping_at("Sure.\n" + block * 8) is not None


def test_a_cycle_after_hundreds_of_distinct_lines_is_caught_and_they_are_not() -> None:
    """The guard keeps only the lines a cycle check reads (trimmed now and then): what came
    long before changes nothing, either way."""
    distinct = "".join(f"step {i}: the value is now {i * 7}\n" for i in range(500))
    assert looping_at(distinct) is None
    cycle = "first line of the cycle\nsecond one\nthird one\n"
    at = looping_at(distinct + cycle * 10)
    assert at is not None and at > len(distinct)


def reference_line_cycle(keys: list[str]) -> bool:
    """Whether the lines (stripped) end in a cycle: every period tried, every line compared."""
    seen = keys[-MAX_PERIOD * MIN_REPEATS :]
    for period in range(1, MAX_PERIOD + 1):
        span = period * MIN_REPEATS
        if len(seen) < span:
            break
        cycle = seen[-period:]
        if len("".join(cycle)) >= MIN_CYCLE_CHARS and all(seen[-span + i] == cycle[i % period] for i in range(span)):
            return True
    return False


def reference_inline(line: str) -> bool:
    """Whether the line ends in a loop: every period tried over the whole line kept."""
    if len(line) < LONG_LINE:
        return False
    for period in range(MIN_FRAGMENT, MAX_FRAGMENT + 1):
        span = inline_span(period)
        if len(line) >= span and line[len(line) - span + period :] == line[len(line) - span : len(line) - period]:
            return True
    return False


class Reference:
    """The guard's definition written plainly (whole lines kept, every period tried): a line
    cycle is looked for at each line that ends, an inline loop at the end of a delta once the
    line is ``LONG_LINE`` long and then each time it has grown ``CHECK_EVERY`` more."""

    def __init__(self) -> None:
        self.text = ""
        self.keys: list[str] = []
        self.due = LONG_LINE

    def feed(self, delta: str) -> bool:
        self.text += delta
        *complete, line = self.text.split("\n")
        if len(self.keys) < len(complete):
            self.due = LONG_LINE
        while len(self.keys) < len(complete):
            self.keys.append(complete[len(self.keys)].strip())
            if reference_line_cycle(self.keys):
                return True
        if len(line) < self.due:
            return False
        self.due = len(line) + CHECK_EVERY
        return reference_inline(line)


def random_answer(rng: random.Random) -> str:
    """Text from a small alphabet, with loops (inline and line cycles) spliced in at random."""
    parts: list[str] = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        if kind < 0.45:
            parts.append("".join(rng.choice("ab c\n") for _ in range(rng.randint(1, 900))))
        elif kind < 0.7:
            fragment = "".join(rng.choice("abc ") for _ in range(rng.randint(1, 130)))
            parts.append(fragment * rng.randint(1, 9))
        elif kind < 0.85:
            parts.append(rng.choice("abc") * rng.randint(300, 800))
        else:
            line = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 20))) + "\n"
            parts.append(line * rng.randint(1, 8))
    return "".join(parts)


def test_the_guard_agrees_with_the_plain_definition_on_random_answers() -> None:
    rng = random.Random(2026)
    said = {True: 0, False: 0}
    for _ in range(300):
        text = random_answer(rng)
        guard, reference, at, verdict = RepetitionGuard(), Reference(), 0, False
        while at < len(text) and not verdict:
            delta = text[at : at + rng.choice((1, 2, 3, 5, 8, 40, 300, 2000))]  # (2000: dozens of lines)
            at += len(delta)
            verdict = guard.feed(delta)
            assert verdict == reference.feed(delta), (text[:at][-300:], at)
        said[verdict] += 1
    assert said[True] > 30 and said[False] > 30  # both outcomes were exercised


@pytest.mark.parametrize("chunk", [1, 4, 7, 33])
def test_a_loop_inside_a_line_is_caught_at_most_check_every_characters_late(chunk: int) -> None:
    """Checked every ``CHECK_EVERY`` characters rather than every delta: no sooner than the
    plain definition says the line loops, and at most that many characters (and a delta) later."""
    line = prose_line(1_500, seed=7) + " " + "I will now repeat myself. " * 40
    first = next(end for end in range(LONG_LINE, len(line) + 1) if reference_inline(line[:end]))
    at = looping_at(line, chunk=chunk)
    assert at is not None
    caught = at + chunk  # the end of the delta that made the guard say so
    assert first <= caught <= first + CHECK_EVERY + chunk


def test_a_million_character_line_costs_each_delta_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    compare = repetition.repeats_at_end

    def counted(tail: str, period: int) -> bool:
        calls.append(len(tail))
        return compare(tail, period)

    monkeypatch.setattr(repetition, "repeats_at_end", counted)
    line = minified_json(20_000)[:1_000_000]
    assert len(line) == 1_000_000
    guard = RepetitionGuard()
    most, deltas = 0, 0
    for at in range(0, len(line), 4):
        before = len(calls)
        assert not guard.feed(line[at : at + 4])
        most = max(most, len(calls) - before)
        deltas += 1
    assert most <= MAX_FRAGMENT - MIN_FRAGMENT + 1  # at most one comparison per period, per delta
    assert len(calls) <= deltas  # on average under one per delta
    assert max(calls) <= 2 * WINDOW  # each over the kept tail, never the line
    assert len(guard._line.tail(WINDOW)) <= WINDOW


def _loop_offset_line_by_line(text: str) -> int | None:
    """Where a guard fed ``text`` a line at a time says it became a loop (the end of that line)."""
    guard, at = RepetitionGuard(), 0
    for line in text.splitlines(keepends=True):
        at += len(line)
        if guard.feed(line):
            return at
    return None


@pytest.mark.parametrize("cycle", [
    ["Turn 2a3ff0b1a1e6: no edit blocks.\n"],
    ["def f():\n", "    return compute_the_value()\n", "\n"],
])
def test_a_step_of_many_cycles_is_cut_where_the_answer_became_a_loop(cycle: list[str]) -> None:
    text = "Here is the plan.\nfirst\n" + "".join(cycle) * 30 + "and after\n"
    end = RepetitionGuard().loop_end(text)  # the whole answer in one step, as a Pilot far behind takes it
    assert end is not None and end == _loop_offset_line_by_line(text)
    assert text[:end].endswith(cycle[-1]) and text[:end].count(cycle[0]) == MIN_REPEATS
    guard = RepetitionGuard()  # the same where the loop completes in a later step
    assert end > 200 and guard.loop_end(text[:200]) is None
    assert guard.loop_end(text[200:]) == end - 200


def test_a_loop_inside_a_long_line_takes_the_whole_step_and_no_loop_takes_none() -> None:
    guard = RepetitionGuard()
    assert guard.loop_end("word " * 100 + "\nplain prose, " + "ab cd " * 10) is None
    step = "x" * 10 + "the same fragment! " * 60
    assert guard.loop_end(step) == len(step)
