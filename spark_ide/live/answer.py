"""Reading a turn's answer as the model streams it (``AnswerReader.read``), up to what ends it.

Each delta is published and applied to the files through the watchdog (``WatchGate.apply``);
the repetition guard, the course's quota and the money budgets (``spend.Budgets``) may end
the turn while the model still writes.
The upstream stream's last event says how the answer ended. What ends it comes back as an
``Ending`` for the Pilot, which ends the turn (``Pilot._finish``) — the one way a turn ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from spark_ide.upstream import (
    Completed,
    ErrorEvent,
    Failed,
    Incomplete,
    Message,
    TextDelta,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    ToolOutput,
    TurnRequest,
    UpstreamError,
)
from spark_ide.upstream.events import TerminalEvent
from spark_ide.upstream.stream import TurnStream

from .events import FinishReason, TurnDelta, TurnEvent, TurnRound, TurnStatus
from .model_link import connect_failure, stop_answer, upstream_failure
from .policy_gate import PolicyGate
from .rounds import ToolRounds
from .spend import Budgets
from .steps import Steps
from .test_rounds import TestRounds
from .test_verdict import verdict_line
from .turns import TurnRun
from .watch_gate import WatchGate


@dataclass(frozen=True, slots=True)
class Ending:
    """How a turn's answer ended. ``upstream_running``: the model may still be writing it (its
    generation is stopped upstream); ``drop_link``: the connection failed for good (the next
    turn opens a new one)."""

    status: TurnStatus
    reason: FinishReason
    error: str = ""
    upstream_running: bool = False
    drop_link: bool = False


NO_ANSWER = Ending(TurnStatus.FAILED, FinishReason.NO_ANSWER, "the model connection ended without an answer")


class AnswerReader:
    """``publish``: the room's turn events; ``policy``: the course's AI policy and its quota;
    ``watchdog``: applies each delta to the files through the security watchdog. A turn's next
    round is asked for on the turn's own link (``TurnRun.link``, ``rounds``)."""

    def __init__(
        self, *, publish: Callable[[TurnEvent], None], policy: PolicyGate, watchdog: WatchGate, budgets: Budgets,
        steps: Steps,
    ) -> None:
        self._publish = publish
        self._steps = steps
        self._policy = policy
        self._watchdog = watchdog
        self._budgets = budgets

    async def read(self, run: TurnRun) -> Ending | None:
        """Read ``run``'s answer until something ends it, round after round while the model
        ends its responses with tool calls; None when the turn ended otherwise meanwhile
        (stopped, steered) or the watchdog halted it (the Pilot's loop corrects it). A stream
        that ends without a last event is ``NO_ANSWER`` (nothing, if the turn ended already:
        ``Pilot._finish`` ends a turn once)."""
        while True:
            last, ending = await self._read_round(run)
            if last is None:
                return ending
            if isinstance(last, Completed) and last.tool_calls:
                ending = await self._next_round(run, last)
            elif isinstance(last, Completed) and run.tools.tests is not None:
                ending = await self._test_round(run, last, run.tools.tests)
            else:
                return self._last(run, last)
            if ending is not None or not run.live:
                return ending

    async def _read_round(self, run: TurnRun) -> tuple[TerminalEvent | None, Ending | None]:
        """One response of the turn: its last event, or (None, what ended the turn first)."""
        assert run.stream is not None
        with self._steps.answer():
            return await self._read_events(run, run.stream)

    async def _read_events(self, run: TurnRun, stream: TurnStream) -> tuple[TerminalEvent | None, Ending | None]:
        tools = run.tools
        loop = asyncio.get_running_loop()
        steps = self._steps
        last_step = float("-inf")  # when the last step of the answer's text began (the first: at once)
        async for event in stream:
            if not run.live:
                return None, None
            if isinstance(event, TextDelta | ToolInputDelta):
                # At most one step of the answer's text per window (``live.steps``): what
                # arrives meanwhile is taken with it (``TurnRun.take_delta``).
                wait = last_step + steps.window_s() - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    if not run.live:
                        return None, None
                last_step = loop.time()
            if isinstance(event, TextDelta):
                halted, ending = self._delta(run, event.text)
            elif isinstance(event, ToolInputDelta):
                halted, ending = self._tool_delta(run, tools, event)
            elif isinstance(event, ToolCallStarted):
                halted, ending = self._call_started(run, tools, event), None
            elif isinstance(event, ToolCallDone):
                halted, ending = self._call_done(run, tools, event), None
            else:
                return event, None
            if halted:
                return None, None  # nothing more of this answer is applied
            if ending is not None:
                return None, ending
        return None, NO_ANSWER

    async def _next_round(self, run: TurnRun, done: Completed) -> Ending | None:
        """The response ended with tool calls: answer them all in the next request of the turn,
        on the warm connection, and read on (``run.stream`` is the new response's); or end the
        turn at the round limit, or when the model cannot be reached."""
        tools = run.tools
        # Its text after the calls, and a call whose last event never came, end here.
        if self._watchdog.apply(run, "", feed=lambda _: [*run.editor.end_text(), *tools.finish_open()]):
            return None
        if tools.last_round:
            return Ending(
                TurnStatus.COMPLETED, FinishReason.ROUND_LIMIT,
                f"the model still called tools after {tools.round} rounds, the most a turn has (SPARK_MAX_ROUNDS)",
            )
        await tools.settle()  # its runs end (a steer meanwhile cancels this, and they are stopped)
        outputs = told_undone(tools.outputs(done.tool_calls), run.editor.take_notes())
        assert run.stream is not None
        request = run.request.next_round(
            response_id=done.response_id, answer=run.stream.text, calls=done.tool_calls, outputs=outputs,
            then=run.changes(),
        )
        return await self._go_on(run, request, calls=len(outputs), failed=sum(o.status == "failed" for o in outputs))

    async def _test_round(self, run: TurnRun, done: Completed, tests: TestRounds) -> Ending | None:
        """The response ended without calls: if it changed files, the IDE runs the tests
        (``test_rounds``); green or red at the round limit ends the turn, red before it asks
        the next round to fix them. None: the turn goes on, or ended meanwhile."""
        answered = self._last(run, done)
        if self._watchdog.apply(run, "", feed=lambda _: run.editor.end_text()):  # its last block settles
            return None
        if not tests.due(run.editor):
            if tests.failing:  # red when last run, and the model gave up: nothing changed since
                return Ending(
                    TurnStatus.COMPLETED, FinishReason.TESTS_FAILED,
                    f"the tests still fail ({tests.failing}): the model's last answer changed nothing",
                )
            return answered
        outcome = await tests.run(run.editor)
        verdict = outcome.verdict
        if not run.live:
            return None
        if verdict is None or verdict.no_tests:
            return answered
        if verdict.green:
            return Ending(TurnStatus.COMPLETED, FinishReason.TESTS_PASSED)
        if run.tools.last_round:
            return Ending(
                TurnStatus.COMPLETED, FinishReason.TESTS_FAILED,
                f"the tests still fail ({verdict_line(verdict)}) after {run.tools.round} rounds, the most a turn has "
                "(SPARK_MAX_ROUNDS)",
            )
        text = "\n".join([tests.request_text(outcome), *run.editor.take_notes()])
        assert run.stream is not None
        request = run.rebuild(text) if run.rebuild is not None else run.request.next_round(
            response_id=done.response_id, answer=run.stream.text, calls=(), outputs=(),
            then=(*run.changes(), Message("user", text)),
        )
        return await self._go_on(run, request, verdict=verdict_line(verdict))

    async def _go_on(self, run: TurnRun, request: TurnRequest, *, calls: int = 0, failed: int = 0,
                     verdict: str = "") -> Ending | None:
        """The turn's next round: ``request`` goes out on the warm connection and its answer is
        read on (``run.stream`` is the new response's); or the turn ends when the model cannot
        be reached."""
        assert run.stream is not None
        spent = self._budgets.exhausted(run)  # the rounds so far used it up: no next request
        if spent is not None:
            return Ending(TurnStatus.CANCELLED, FinishReason.BUDGET_EXHAUSTED, spent)
        run.request = request
        run.said.append(run.stream.text)
        run.rounds.append(run.stream)
        run.tools.next_round()
        self._publish(TurnRound(turn=run.id, round=run.tools.round, calls=calls, failed=failed, verdict=verdict))
        try:
            stream = await self._start_round(run)
        except (UpstreamError, OSError) as exc:
            reason, error = connect_failure(exc)
            return Ending(TurnStatus.FAILED, reason, error, drop_link=True)
        if not run.live:  # ended while the request went out: its answer is not wanted
            await stop_answer(stream)
            return None
        run.stream = stream
        return None

    def _call_started(self, run: TurnRun, tools: ToolRounds, event: ToolCallStarted) -> bool:
        """A call begins: the text before it is whole (through the watchdog: True, halted)."""
        return self._watchdog.apply(run, "", feed=lambda _: tools.started(event))

    def _call_done(self, run: TurnRun, tools: ToolRounds, event: ToolCallDone) -> bool:
        """A call's input is whole: its last hunk closes (through the watchdog: True, halted)."""
        return self._watchdog.apply(run, "", feed=lambda _: tools.done(event))

    async def _start_round(self, run: TurnRun) -> TurnStream:
        """Send the next round's request. The sending goes on if the turn ends meanwhile (a
        steer or stop cancels this task): a request that went out is then stopped upstream as
        soon as its stream exists, never left running behind the next turn."""
        if run.link is None:
            raise RuntimeError(f"turn {run.id} has no model link")
        client = await run.link.client()
        starting = asyncio.ensure_future(client.start(run.request))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            starting.add_done_callback(_stop_unwanted)
            raise

    def _tool_delta(self, run: TurnRun, tools: ToolRounds, event: ToolInputDelta) -> tuple[bool, Ending | None]:
        """Apply more of a call's input (with what waits of it, up to the quota): whether the
        watchdog halted the turn, and whether the quota ends it."""
        text = run.take_input(event.call_id, event.text, self._policy.tokens_left(run.streamed_tokens + 1))
        if self._watchdog.apply(run, text, feed=lambda piece: tools.delta(event.call_id, piece)):
            return True, None
        return False, self._after_tokens(run)

    def _delta(self, run: TurnRun, delta: str) -> tuple[bool, Ending | None]:
        """Publish and apply a delta (with those waiting behind it, up to the quota): whether
        the watchdog halted the turn, and what else ends it (a loop, the quota)."""
        text = run.take_delta(delta, self._policy.tokens_left(run.streamed_tokens + 1))
        # A step that makes the answer a loop is shown and applied up to where it became one
        # (a step of deltas taken together may hold many more of its cycles).
        looped = run.repetition.loop_end(text)
        if looped is not None:
            text = text[:looped]
        self._publish(TurnDelta(turn=run.id, text=text))
        if self._watchdog.apply(run, text):
            return True, None
        if looped is not None:
            return False, Ending(
                TurnStatus.CANCELLED, FinishReason.REPETITION, "the model was repeating itself; it was stopped",
                upstream_running=True,
            )
        return False, self._after_tokens(run)

    def _after_tokens(self, run: TurnRun) -> Ending | None:
        """After more of the answer was applied: the rules and the policy as they are now, and
        the quota's end when the turn passed it."""
        self._policy.refresh()
        self._watchdog.refresh_rules()
        if self._policy.over_quota(run.streamed_tokens):
            return Ending(
                TurnStatus.CANCELLED, FinishReason.QUOTA, self._policy.quota_message(), upstream_running=True,
            )
        spent = self._budgets.exhausted(run)
        if spent is not None:
            return Ending(TurnStatus.CANCELLED, FinishReason.BUDGET_EXHAUSTED, spent, upstream_running=True)
        return None

    @staticmethod
    def _last(run: TurnRun, event: Completed | Incomplete | Failed | ErrorEvent) -> Ending:
        """The ending of an answer whose stream ended with ``event``."""
        if isinstance(event, Completed):
            return Ending(TurnStatus.COMPLETED, FinishReason.ANSWERED)
        if isinstance(event, Incomplete):
            return Ending(TurnStatus.COMPLETED, FinishReason.INCOMPLETE, f"the answer was cut short: {event.reason}")
        reason, error = upstream_failure(event)
        return Ending(
            TurnStatus.FAILED, reason, error, drop_link=isinstance(event, ErrorEvent) and not event.retryable,
        )


def told_undone(outputs: list[ToolOutput], notes: list[str]) -> list[ToolOutput]:
    """The round's tool outputs, the last one saying which blocks people undid meanwhile
    (``notes``), so the model does not write them again."""
    if not notes or not outputs:
        return outputs
    last = outputs[-1]
    said = "\n".join(["", "Meanwhile, in the editor:", *(f"- {note}" for note in notes)])
    return [*outputs[:-1], ToolOutput(last.call, last.output + "\n" + said, last.status)]


_STOPPING: set[asyncio.Task[None]] = set()  # stops of unwanted rounds, kept until they end


def _stop_unwanted(starting: asyncio.Future[TurnStream]) -> None:
    """A round's request went out after its turn had ended: stop its answer upstream."""
    if starting.cancelled() or starting.exception() is not None:
        return
    task = asyncio.get_running_loop().create_task(stop_answer(starting.result()))
    _STOPPING.add(task)
    task.add_done_callback(_STOPPING.discard)
