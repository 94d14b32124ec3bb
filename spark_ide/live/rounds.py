"""A turn's tool calls, round by round (the tool loop, docs/protocol.md §4 "Rounds").

A model that edits through the ``apply_patch`` tool ends a response with its calls; the IDE
applies each call while its input streams (``editing.PatchCall``: hunks land in place) and
answers all of them in the next request of the same turn, on the same warm connection
(``TurnRequest.next_round``). The turn ends with a response without calls, at the round limit
(``SPARK_MAX_ROUNDS``), or by whatever ends a turn today (stop, steer, revert, quota, the
watchdog).

``ToolRounds`` keeps the calls of the round in progress and turns them into outputs. A call
to a tool the IDE does not offer (a hallucinated name) is answered ``failed`` saying so; a
call cut off by the turn's end is answered ``failed: interrupted by the user`` (the editor's
``cancel`` closes it), so no call is ever left unanswered.

A ``run`` call (``model_runs``) starts the moment its input is whole, on the files as they
are then, and runs while the model may still write; the round's outputs wait for its end
(``settle``). A turn that ends meanwhile stops it (``cancel``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from spark_ide.editing import EditEvent, PatchCall, PatchOperation, TurnEditor
from spark_ide.upstream import ToolCall, ToolCallDone, ToolCallStarted, ToolOutput
from spark_ide.upstream.dialects import APPLY_PATCH, RUN, EditStyle

from .model_runs import RunAnswer, TurnRuns
from .run_command import CommandRefused, RunCommand
from .test_rounds import TestRounds

STOPPED = "Failed: stopped by the user (the turn ended while it ran)."


@dataclass(slots=True)
class ToolRounds:
    """The tool calls of one turn. ``offered``: the tool names its requests offer (none for a
    text dialect or an explain-only turn, whose patches are then refused as unknown tools)."""

    editor: TurnEditor
    offered: frozenset[str]
    max_rounds: int
    runs: TurnRuns | None = None  # the run tool's (offered: ``RUN`` in ``offered``)
    tests: TestRounds | None = None  # the IDE's test rounds (told of the model's own test runs)
    round: int = 1
    ran: list[str] = field(default_factory=list)  # each run of the turn and how it ended, for a steer's ledger
    _patches: dict[str, PatchCall] = field(default_factory=dict)  # this round's, by call id
    _unknown: dict[str, str] = field(default_factory=dict)  # call id -> the name asked for
    _run_calls: set[str] = field(default_factory=set)  # this round's run calls whose input streams
    _running: dict[str, tuple[str, asyncio.Task[RunAnswer]]] = field(default_factory=dict)  # id -> command, run
    _answers: dict[str, RunAnswer] = field(default_factory=dict)

    @property
    def last_round(self) -> bool:
        return self.round >= self.max_rounds

    def started(self, event: ToolCallStarted) -> list[EditEvent]:
        """A call begins: the model's text before it is whole (what the text reader held is
        prose now, before the call's blocks); an ``apply_patch`` call starts applying; any
        other name is noted."""
        said = self.editor.end_text()
        if event.name not in self.offered:
            self._unknown[event.call_id] = event.name
            return said
        if event.name == RUN:
            self._run_calls.add(event.call_id)
            return said
        operation = None
        if event.operation is not None:
            operation = PatchOperation(event.operation, event.path or "")
        self._patches[event.call_id] = self.editor.open_patch(event.call_id, operation)
        return said

    def delta(self, call_id: str, text: str) -> list[EditEvent]:
        """More of a call's input: applied at once (hunks stream into the file)."""
        patch = self._patches.get(call_id)
        if patch is None or patch.ended:
            return []
        return patch.feed(text)

    def done(self, event: ToolCallDone) -> list[EditEvent]:
        """A call's input is whole: its last hunk and operation close; a run starts."""
        if event.call_id in self._run_calls:
            self._start_run(event.call)
            return []
        patch = self._patches.get(event.call_id)
        if patch is None or patch.ended:
            return []
        return patch.finish()

    def finish_open(self) -> list[EditEvent]:
        """The response ended: a call whose last event never came ends with what came of it."""
        return [event for patch in self._patches.values() if not patch.ended for event in patch.finish()]

    async def settle(self) -> None:
        """Wait for the round's runs to end (cancelled: they are stopped, ``cancel``)."""
        if self._running:
            await asyncio.wait([task for _, task in self._running.values()])
        for call_id, (_, task) in list(self._running.items()):
            self._answers[call_id] = task.result()
        self._running.clear()

    def cancel(self) -> None:
        """The turn ended: a run still going is stopped, and noted as stopped by the user."""
        for text, task in self._running.values():
            task.cancel()
            self.ran.append(f"- run `{text}`: {STOPPED}")
        self._running.clear()

    def outputs(self, calls: Sequence[ToolCall]) -> list[ToolOutput]:
        """One output per call the response ended with, in its order (after ``finish_open``
        and ``settle``); the round is over."""
        outputs = [self._output(call) for call in calls]
        self._patches.clear()
        self._unknown.clear()
        self._run_calls.clear()
        self._answers.clear()
        return outputs

    def next_round(self) -> None:
        self.round += 1

    def _start_run(self, call: ToolCall) -> None:
        """A run call's command is whole: refused at once, or started (``settle`` waits)."""
        assert self.runs is not None  # RUN is offered only with the turn's runs
        try:
            command = self.runs.parse(call.input)
        except CommandRefused as exc:
            self._answers[call.call_id] = RunAnswer(f"Failed: not run: {exc}", "failed")
            self.ran.append(f"- run {call.input[:200]!r}: refused ({exc.reason})")
            return
        task = asyncio.get_running_loop().create_task(self._run(command, self.runs))
        self._running[call.call_id] = (command.text, task)

    async def _run(self, command: RunCommand, runs: TurnRuns) -> RunAnswer:
        at = self.tests.point(self.editor) if self.tests is not None else None
        answer = await runs.run(command)
        self.ran.append(f"- ran `{command.text}`: {answer.status}" + (
            f" (exit code {answer.result.finished.exit_code})" if answer.result is not None else ""
        ))
        if self.tests is not None and at is not None:
            self.tests.model_ran(command, answer, at)
        return answer

    def _output(self, call: ToolCall) -> ToolOutput:
        if call.call_id in self._run_calls:
            answer = self._answers.get(call.call_id)
            if answer is None:  # its input never came whole
                return ToolOutput(call, "Failed: the call ended before its command was whole; nothing ran.", "failed")
            return ToolOutput(call, answer.text, answer.status)
        patch = self._patches.get(call.call_id)
        if patch is None:
            name = self._unknown.get(call.call_id, call.name)
            offered = ", ".join(sorted(self.offered)) or "none (editing is off)"
            return ToolOutput(call, f"Failed: there is no tool named {name!r} here. Tools offered: {offered}.",
                              "failed")
        result = patch.result
        return ToolOutput(call, result.output, result.status.value)


def offered_tools(edit_style: EditStyle | None, *, runs: bool = False) -> frozenset[str]:
    """The tool names a request with ``edit_style`` offers (``TurnRequest.edit_style``), with
    ``runs`` the run tool beside the editing one (``TurnRequest.runs``)."""
    if edit_style is None or not edit_style.uses_tool:
        return frozenset()
    return frozenset({APPLY_PATCH, RUN}) if runs else frozenset({APPLY_PATCH})
