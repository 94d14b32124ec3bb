"""Runs on the model's behalf: its ``run`` tool calls and the IDE's test rounds.

A model's run is a normal room run (``RoomRuns.run_for_model``): everyone sees it in the
run panel, marked as the model's, it is recorded, and it waits its turn behind a person's run
(answered ``failed: busy`` after ``model_run_wait_s``). Before it starts, the watchdog's rule
for runs applies: with high-severity findings in the files, a person is asked to confirm; the
model is refused, with the findings, and asked to fix them. What the model is told of a run
is ``run_report``'s: how it ended and its output cut to ``run_output_to_model``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from spark_ide.guard import Finding

from .events import RunFinished
from .run_command import CommandRefused, RunCommand, parse_run_command
from .run_report import run_report

MAX_FINDINGS_TOLD = 10


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended, with its output as kept (what a model's run reports to it)."""

    finished: RunFinished
    output: str


class RoomRunsPort(Protocol):
    """What the model's runs need of the room's (``runs.RoomRuns``)."""

    @property
    def wait_s(self) -> float:
        """How long a model's run waits for another run to end."""

    async def run_for_model(
        self, command: RunCommand, *, turn: str, by: str, session: str, author_id: int | None,
    ) -> RunResult | None:
        """Run ``command`` for the model and wait for its end; None: busy all the wait."""


@dataclass(frozen=True, slots=True)
class RunAnswer:
    """What came of a model's run: the tool output (``text``) and its status; ``result``: the
    run's end and whole kept output (None when it never started: refused, busy)."""

    text: str
    status: Literal["completed", "failed"]
    result: RunResult | None = None


@dataclass(frozen=True, slots=True)
class RunFor:
    """Whose turn a model's run belongs to (the run panel's ``by``, the record's author)."""

    turn: str
    by: str
    session: str
    author_id: int | None


class ModelRuns:
    """The room's runs as the model uses them. ``texts``: the files as they are now;
    ``high_findings``: the watchdog's high-severity findings in them; ``budget``: bytes of
    output the model is told."""

    def __init__(
        self, runs: RoomRunsPort, *, texts: Callable[[], Mapping[str, str]],
        high_findings: Callable[[], list[Finding]], budget: int,
    ) -> None:
        self._runs = runs
        self.texts = texts
        self._high_findings = high_findings
        self._budget = budget

    def files(self) -> Collection[str]:
        return self.texts().keys()

    async def run(self, command: RunCommand, owner: RunFor) -> RunAnswer:
        high = self._high_findings()
        if high:
            return RunAnswer(refused_for_findings(command, high), "failed")
        result = await self._runs.run_for_model(
            command, turn=owner.turn, by=owner.by, session=owner.session, author_id=owner.author_id,
        )
        if result is None:
            return RunAnswer(
                f"Failed: busy. Someone else's run was going on in the workspace for "
                f"{self._runs.wait_s:g} s; `{command.text}` did not run. Try again later, or go on without it.",
                "failed",
            )
        text = run_report(command.text, result.finished, result.output, budget=self._budget)
        ok = result.finished.status == "ok" and not result.finished.error
        return RunAnswer(text, "completed" if ok else "failed", result)


def refused_for_findings(command: RunCommand, high: list[Finding]) -> str:
    """The answer to a run asked for while the files hold high-severity watchdog findings."""
    listed = "\n".join(f"- {f.path}:{f.line}: {f.message} ({f.fix})" for f in high[:MAX_FINDINGS_TOLD])
    more = f"\n(and {len(high) - MAX_FINDINGS_TOLD} more)" if len(high) > MAX_FINDINGS_TOLD else ""
    return (
        f"Failed: `{command.text}` was not run. The security watchdog found high-severity problems in the "
        f"code, and code with such problems is not run for you:\n{listed}{more}\n"
        "Fix them first, then run again."
    )


@dataclass(frozen=True, slots=True)
class TurnRuns:
    """The model's runs in one turn: ``tests_only`` (the course's ``ai_runs`` is ``tests``)
    holds its run tool to ``pytest`` commands."""

    runs: ModelRuns
    owner: RunFor
    tests_only: bool = False

    def parse(self, text: str) -> RunCommand:
        """The command of a ``run`` call, or `CommandRefused` (outside the grammar, a file that
        is not there, a program where the course allows only the tests)."""
        command = parse_run_command(text, files=self.runs.files())
        if self.tests_only and not command.tests:
            raise CommandRefused("this course lets the model run the tests only (pytest ...), not programs")
        return command

    async def run(self, command: RunCommand) -> RunAnswer:
        return await self.runs.run(command, self.owner)
