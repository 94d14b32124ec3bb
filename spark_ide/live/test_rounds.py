"""Test rounds (``SPARK_AUTO_TEST``): the IDE runs the tests after the model's changes.

When a response ends without tool calls and the turn changed files since the whole suite last
ran (the IDE's run, or the model's own ``pytest`` of every test), the IDE runs the tests the
way a person's Run does (``pytest``), in the room, marked as the model's. Green ends the turn
``tests_passed``; red starts the next round with the failure (``test_verdict``) as the
request, until the round limit (``tests_failed``). A workspace without tests, or a run that
could not start, ends the turn as it would have ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_ide.editing import Outcome, TurnEditor

from .model_runs import RunAnswer, TurnRuns
from .run_command import PYTEST_FLAGS, RunCommand
from .test_verdict import TestVerdict, failure_summary, has_tests, read_verdict, verdict_line

THE_TESTS = RunCommand(tests=True)  # as a person's Run of the tests


def changes(editor: TurnEditor) -> int:
    """How many of the turn's edits changed the files so far (it only grows)."""
    return len(editor.ledger.with_outcome(Outcome.APPLIED, Outcome.CONFLICTED))


def whole_suite(command: RunCommand) -> bool:
    """Whether ``command`` runs every test (only -x / -q, no paths, no -k)."""
    return command.tests and all(arg in PYTEST_FLAGS for arg in command.args)


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """A test round's run: the tool-style answer, and the verdict read from its output (None:
    the run did not happen: refused, busy, the sandbox unavailable)."""

    answer: RunAnswer
    verdict: TestVerdict | None

    @property
    def ran(self) -> bool:
        return self.verdict is not None


@dataclass
class TestRounds:
    """A turn's test rounds. ``budget``: bytes of the failure the next request carries."""

    runs: TurnRuns
    budget: int
    tested_at: int = 0  # ``changes`` when the whole suite last ran
    failing: str = ""  # the verdict of that run when it was red ("1 failed"), else ""

    def due(self, editor: TurnEditor) -> bool:
        """Whether the tests are to run now: files changed since they last ran, and there are tests."""
        return changes(editor) > self.tested_at and has_tests(self.runs.runs.files())

    def model_ran(self, command: RunCommand, answer: RunAnswer, at: int) -> None:
        """The model ran ``command`` itself when the turn had made ``at`` changes: a run of the
        whole suite counts as the tests having run then."""
        result = answer.result
        if whole_suite(command) and result is not None and not result.finished.error and at >= self.tested_at:
            self.tested_at = at
            verdict = read_verdict(result.output, result.finished.exit_code)
            self.failing = "" if verdict.green or verdict.no_tests else verdict_line(verdict)

    async def run(self, editor: TurnEditor) -> TestOutcome:
        """Run the tests on the files as they are now."""
        self.tested_at = changes(editor)
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
