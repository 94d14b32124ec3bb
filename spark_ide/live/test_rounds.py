"""Test rounds (``SPARK_AUTO_TEST``): the IDE runs the tests after the model's changes.

When a response ends without tool calls, the model changed files since the whole suite last
ran (the IDE's run, or the model's own ``pytest`` of every test) and the files are not what
they were then (a rewrite of the same text changes nothing), the IDE runs the tests the
way a person's Run does (``pytest``), in the room, marked as the model's. Green ends the turn
``tests_passed``; red starts the next round with the failure (``test_verdict``) as the
request, until the round limit (``tests_failed``). A workspace without tests, or a run that
could not start, ends the turn as it would have ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_ide.editing import TurnEditor

from .model_runs import RunAnswer, TurnRuns
from .run_command import PYTEST_FLAGS, RunCommand
from .test_verdict import TestVerdict, failure_summary, has_tests, read_verdict, verdict_line

THE_TESTS = RunCommand(tests=True)  # as a person's Run of the tests


def changes(editor: TurnEditor) -> int:
    """How many of the turn's edits changed the files so far (it only grows)."""
    return len(editor.ledger.changed())


def whole_suite(command: RunCommand) -> bool:
    """Whether ``command`` runs every test (only -x / -q, no paths, no -k)."""
    return command.tests and all(arg in PYTEST_FLAGS for arg in command.args)


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """A test round's run: the tool-style answer, and the verdict read from its output (None:
    the run did not happen: refused, busy, the sandbox unavailable)."""

    answer: RunAnswer
    verdict: TestVerdict | None


@dataclass(frozen=True, slots=True)
class Point:
    """Where a turn stood: how many changes its model had made, and the files' texts."""

    changes: int
    texts: Mapping[str, str]


@dataclass
class TestRounds:
    """A turn's test rounds. ``budget``: bytes of the failure the next request carries;
    ``tested``: where the turn stood when the whole suite last ran (at first: its start)."""

    runs: TurnRuns
    budget: int
    tested: Point = field(default_factory=lambda: Point(0, {}))
    failing: str = ""  # the verdict of that run when it was red ("1 failed"), else ""

    def point(self, editor: TurnEditor) -> Point:
        return Point(changes(editor), dict(self.runs.runs.texts()))

    def due(self, editor: TurnEditor) -> bool:
        """Whether the tests are to run now: the model changed files since they last ran, the
        files differ from then, and there are tests."""
        if changes(editor) <= self.tested.changes:
            return False
        texts = self.runs.runs.texts()
        return texts != self.tested.texts and has_tests(texts)

    def model_ran(self, command: RunCommand, answer: RunAnswer, at: Point) -> None:
        """The model ran ``command`` itself, having started it ``at``: a run of the whole suite
        counts as the tests having run then."""
        result = answer.result
        if result is None or result.finished.error or not whole_suite(command) or at.changes < self.tested.changes:
            return
        self.tested = at
        verdict = read_verdict(result.output, result.finished.exit_code)
        self.failing = "" if verdict.green or verdict.no_tests else verdict_line(verdict)

    async def run(self, editor: TurnEditor) -> TestOutcome:
        """Run the tests on the files as they are now."""
        self.tested = self.point(editor)
        answer = await self.runs.run(THE_TESTS)
        result = answer.result
        if result is None or result.finished.error:
            return TestOutcome(answer, None)
        verdict = read_verdict(result.output, result.finished.exit_code)
        self.failing = "" if verdict.green or verdict.no_tests else verdict_line(verdict)
        return TestOutcome(answer, verdict)

    def request_text(self, outcome: TestOutcome) -> str:
        """What the next round is asked: fix the failures."""
        assert outcome.verdict is not None and outcome.answer.result is not None
        summary = failure_summary(outcome.verdict, outcome.answer.result.output, budget=self.budget)
        return (
            "The IDE ran the tests after your changes, and they fail.\n"
            f"{summary}\n"
            "Fix the code so that the tests pass (change the tests only if they are wrong)."
        )
