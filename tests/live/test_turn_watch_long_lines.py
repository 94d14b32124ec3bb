"""``TurnWatch`` over long lines streamed a few characters at a time (a 200,000-character line is 50,000 deltas): each
delta's work must not grow with the line so far, and what is in the line is still found, when the line ends.

No timing is asserted: the stages that read the code (the word search, the secret rules, the statement lexer and
checker, the parser) are wrapped to count the characters they are handed, delta by delta."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from spark_ide.editing import BlockKind, BlockStatus, CodeText, EditState
from spark_ide.guard import Finding, Severity, prefilter, python_lexer, python_stream, scan_text, scanner, secret_rules
from spark_ide.guard.python_fstrings import PIECE, split_fstrings
from spark_ide.guard.secret_rules import _SECRET_HINTS
from spark_ide.live.turn_watch import TurnWatch
from spark_ide.live.watchdog import GuardRules
from tests.guard.corpus import AWS_KEY_ID

LONG = 200_000
DELTA = 4
PATH = "app/views.py"


@dataclass
class Reads:
    """Characters the stages that read code were handed (or, for two of them, read inside: see ``reads``), by stage,
    since the last ``take``."""

    by_stage: dict[str, int] = field(default_factory=dict)

    def add(self, stage: str, size: int) -> None:
        self.by_stage[stage] = self.by_stage.get(stage, 0) + size

    def take(self) -> dict[str, int]:
        taken, self.by_stage = self.by_stage, {}
        return taken


def _size(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, python_lexer.Statement):
        return sum(len(line) for line in value.lines)
    return 0


def _counting(reads: Reads, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: object, **kwargs: object) -> Any:
        reads.add(stage, sum(_size(arg) for arg in (*args, *kwargs.values())))
        return function(*args, **kwargs)

    return counted


_NAME_RUN = re.compile(r"[\w.\-$]*+")


class _NameRuns:
    """Stands in for the secret gate's ``_REST_OF_NAME``: counts the name characters each match reads."""

    def __init__(self, reads: Reads, pattern: re.Pattern[str]) -> None:
        self.reads, self.pattern = reads, pattern

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        run = _NAME_RUN.match(text, pos)
        self.reads.add(NAME_RUNS, run.end() - pos if run is not None else 0)
        return self.pattern.match(text, pos)


def _fstring_work(source: str) -> int:
    """What 3.11's parser reads placing the fields of the f-strings in ``source``: each field, its token's length."""
    work = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and "{" in token.string:
            work += token.string.count("{") * len(token.string)
    return work


NAME_RUNS, PARSER = "the secret gate's name runs", "the parser's f-string fields"
# The most each stage may read over a whole stream, per character of the stream: the stages handed completed lines
# read each once (the lexer's shortcut and the lexer itself may both see one), the gate each name once per hint, and
# the parser an f-string's fields each in a token of at most ``PIECE`` and a field.
BOUNDS = {NAME_RUNS: len(_SECRET_HINTS), PARSER: PIECE + 64}
HANDED_BOUND = 2


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    counted = Reads()
    for owner, name in (
        (prefilter.Words, "lines"),  # the word search over completed lines (tier 1's and the statements')
        (scanner, "secret_findings"),  # tier 1's patterns on a marked line
        (secret_rules, "_may_assign_a_secret"),  # its gate before the assignment patterns
        (python_stream.PythonStatements, "lines"),  # tier 2 over completed lines
        (python_lexer.LogicalLines, "passes"),  # the lexer's shortcut for a whole statement
        (python_lexer.LogicalLines, "push"),  # the lexer
        (python_stream, "parse_statement"),  # the parser, on a statement a rule wants
    ):
        monkeypatch.setattr(owner, name, _counting(counted, f"{getattr(owner, '__name__', owner)}.{name}",
                                                   getattr(owner, name)))
    monkeypatch.setattr(secret_rules, "_REST_OF_NAME", _NameRuns(counted, secret_rules._REST_OF_NAME))
    def split_counted(source: str) -> str:
        cut = split_fstrings(source)
        counted.add(PARSER, _fstring_work(cut))
        return cut

    monkeypatch.setattr(python_lexer, "split_fstrings", split_counted)
    return counted


def _deltas(text: str, first_line: int = 1) -> Iterator[list[CodeText]]:
    for at in range(0, len(text), DELTA):
        yield [CodeText(block=0, path=PATH, first_line=first_line, text=text[at : at + DELTA])]


def _applied() -> BlockStatus:
    return BlockStatus(turn="t", block=0, path=PATH, kind=BlockKind.WRITE, state=EditState.APPLIED)


def _stream(watch: TurnWatch, text: str) -> list[tuple[str, list[Finding]]]:
    """Feed ``text`` delta by delta: each delta and its findings."""
    return [(code[0].text, watch.feed(code)) for code in _deltas(text)]


def _found_as_the_line_ended(text: str, fed: list[tuple[str, list[Finding]]]) -> list[Finding]:
    """The findings of the stream; each must have come with the delta holding the end of its line (so before the next
    line could be applied), not earlier, not later."""
    found, at = [], 0
    for delta, findings in fed:
        for finding in findings:
            line_end = -1
            for _ in range(finding.line):
                line_end = text.index("\n", line_end + 1)
            assert at <= line_end < at + len(delta), (finding, at, line_end)
            found.append(finding)
        at += len(delta)
    return found


def _repeat(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


PROSE = _repeat("the model keeps writing one paragraph without a line break, ", LONG)
LONG_LINES = {
    "a string literal": 'BANNER = "' + _repeat("lorem ipsum dolor sit amet, ", LONG) + '"',
    "a prose comment": "# " + PROSE,
    "minified JSON": "DATA = " + "{" + ",".join(f'"key{n}": [{n}, "token", null]' for n in range(LONG // 28)) + "}",
    "a run of secret hints": "x = '" + "token" * (LONG // 5) + "'",
    "an f-string of fields": 'q = f"select ' + "{a} from {b} where " * (LONG // 19) + '"',
}


@pytest.mark.parametrize("kind", list(LONG_LINES))
def test_a_long_line_costs_each_delta_only_its_own_characters(kind: str, reads: Reads) -> None:
    line = LONG_LINES[kind]
    text = "import os\n" + line + "\nx = 1\n"
    watch = TurnWatch(GuardRules())
    totals: dict[str, int] = {}
    inside = 0
    for code in _deltas(text):
        assert watch.feed(code) == []
        handed = reads.take()
        for stage, size in handed.items():
            totals[stage] = totals.get(stage, 0) + size
        if "\n" not in code[0].text:
            # A delta inside a line hands the stages nothing but itself: nothing grows with the line so far.
            assert sum(handed.values()) <= DELTA, handed
            inside += 1
    assert inside >= len(text) // DELTA - 3
    # The line's end reads the line a bounded number of times, not once per delta (nor once per word in it).
    for stage, total in totals.items():
        assert total <= BOUNDS.get(stage, HANDED_BOUND) * len(text), (stage, total, len(text))
    assert watch.feed([], [_applied()]) == []


@pytest.mark.parametrize("where", ["end", "middle"])
def test_a_secret_in_a_long_line_is_found_when_the_line_ends(where: str) -> None:
    middle = len(PROSE) // 2 if where == "middle" else len(PROSE)
    line = "# " + PROSE[:middle] + f" key {AWS_KEY_ID} " + PROSE[middle:]
    text = "import os\n" + line + "\nx = 1\n"
    watch = TurnWatch(GuardRules())
    found = _found_as_the_line_ended(text, _stream(watch, text))
    assert [(finding.rule, finding.line, finding.severity) for finding in found] == [
        ("secret-aws-key", 2, Severity.HIGH),
    ]
    assert watch.rules.halts(found[0])
    assert [finding.key for finding in found] == [finding.key for finding in scan_text(PATH, text)]


FLAWS = {  # rule: (its line, the text)
    # a shell command built at the end of a line holding a long literal
    "os-system": (2, 'import os\npayload = "' + "a" * LONG + '"; os.system(payload + user_input)\n'),
    # an AWS key inside a minified JSON line
    "secret-aws-key": (1, "DATA = {" + ",".join(
        f'"key{n}": "{AWS_KEY_ID if n == LONG // 50 else "v" * 8}"' for n in range(LONG // 20)
    ) + "}\n"),
    # SQL built in a long f-string (3.11 parsed it in quadratic time)
    "sql-format": (2, 'def find(cursor, a, b):\n    cursor.execute(f"SELECT * FROM t WHERE '
                   + "x = {a} OR y = {b} OR " * (LONG // 22) + '1")\n'),
    # eval at the end of a long expression
    "eval-exec": (1, "result = [" + "1, " * (LONG // 3) + "eval(request_text)]\n"),
}


@pytest.mark.parametrize("rule", list(FLAWS))
def test_a_high_flaw_in_a_long_line_halts_when_the_line_ends(rule: str) -> None:
    line, flawed = FLAWS[rule]
    text = flawed + "after = 1\n"
    watch = TurnWatch(GuardRules())
    found = _found_as_the_line_ended(text, _stream(watch, text))
    assert [(finding.rule, finding.line, finding.severity) for finding in found] == [(rule, line, Severity.HIGH)]
    assert watch.rules.halts(found[0])
    assert [finding.key for finding in found] == [finding.key for finding in scan_text(PATH, text)]


def test_held_long_lines_give_the_same_findings() -> None:
    """While the stream outruns the room the watch holds the deltas (``behind``): same findings, same lines."""
    text = "".join(flawed for _, flawed in FLAWS.values())
    watch = TurnWatch(GuardRules())
    found: list[Finding] = []
    for index, code in enumerate(_deltas(text)):
        found += watch.feed(code, behind=index % 5 != 0)
    found += watch.feed([], [_applied()])
    assert [finding.key for finding in found] == [finding.key for finding in scan_text(PATH, text)]
