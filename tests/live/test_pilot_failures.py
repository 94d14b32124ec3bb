"""Every way the model's side can fail ends the turn the same way, without Django: a
``turn.finished`` with the status and reason that say what happened, its block in flight
rolled back, its end recorded, and the next queued prompt started."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from spark_ide.live.events import TurnStarted
from spark_ide.upstream import TurnStream, UpstreamError
from tests.support.pilot_rig import PilotRig, pilot_rig

FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}
HALF_BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n'


async def in_flight(rig: PilotRig, turn: str) -> TurnStream:
    """The model is half-way through a block that changes util.py."""
    stream = await rig.model.next_stream()
    stream.delta("Changing X.\n")
    stream.delta(HALF_BLOCK)
    await rig.delta_seen(turn, HALF_BLOCK)
    assert rig.states(turn)[-1] == "streaming"
    return stream


@pytest.mark.parametrize(
    ("ending", "status", "reason", "error"),
    [
        (lambda s: s.error("connection_lost", "socket closed", retryable=True), "failed", "connection_lost",
         "dropped mid-answer"),
        (lambda s: s.error("timeout", "nothing for 30 s", retryable=True), "failed", "stalled", "stopped sending"),
        (lambda s: s.error("rate_limited", "slow down", retryable=True), "failed", "model_error", "slow down"),
        (lambda s: s.fail("server_error", "the model crashed"), "failed", "model_error", "the model crashed"),
        (lambda s: s.incomplete("max_output_tokens"), "completed", "incomplete", "max_output_tokens"),
        (lambda s: s.detach(), "failed", "no_answer", "ended without an answer"),
    ],
    ids=["dropped", "stalled", "error-event", "failed", "incomplete", "no-answer"],
)
async def test_a_turn_the_model_ends_badly_says_why_rolls_back_is_recorded_and_the_queue_goes_on(
    ending: Callable[[TurnStream], None], status: str, reason: str, error: str
) -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X")
        stream = await in_flight(rig, turn)
        waiting = rig.prompt("next")
        ending(stream)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == (status, reason)
        assert error in finished.error
        assert rig.states(turn)[-1] in ("rolled_back", "failed")  # the unfinished block is not kept
        assert rig.texts() == FILES
        await rig.started(lambda event: event.turn == waiting)  # the queue goes on
        await rig.recorded(turn)
        outcome = rig.store.outcome(turn)
        assert (outcome.status, outcome.reason) == (status, reason) and error in outcome.error


async def test_no_model_at_the_start_fails_the_turn_and_the_next_prompt_connects_again() -> None:
    async with pilot_rig(FILES) as rig:
        rig.model.refuse.append(UpstreamError("provider_unavailable", "connection refused"))
        turn = rig.prompt("one")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("failed", "model_unavailable")
        assert "connection refused" in finished.error
        again = rig.prompt("two")
        stream = await rig.model.next_stream()
        stream.complete(None)
        assert (await rig.finished(again)).status == "completed"
        assert rig.model.connects == 2  # the client that failed was dropped


async def test_an_error_that_will_not_pass_drops_the_connection_for_a_new_one() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("one")
        (await rig.model.next_stream()).error("invalid_api_key", "bad key", retryable=False)
        assert (await rig.finished(turn)).reason == "model_error"
        rig.prompt("two")
        await rig.model.next_stream()
        assert (rig.model.connects, rig.model.closed) == (2, 1)


class Exploding(TurnStream):
    async def __anext__(self) -> object:  # type: ignore[override]
        raise RuntimeError("a bug of ours")


async def test_a_bug_while_reading_the_answer_fails_the_turn_loudly_and_the_queue_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.__class__ = Exploding  # its next event, after the one it waits for now, raises
        waiting = rig.prompt("two")
        stream.delta("x")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("failed", "internal_error")
        assert "a bug of ours" in finished.error and f"turn {turn} failed" in caplog.text
        await rig.published.until(TurnStarted, lambda event: event.turn == waiting)


async def test_a_looping_answer_is_stopped_as_repetition_and_the_model_stopped() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.delta("Here is the plan.\n")
        for _ in range(30):
            stream.delta("Turn 2a3ff0b1a1e6: no edit blocks.\n")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("cancelled", "repetition")
        assert rig.model.stopped == [stream]
        assert rig.answer(turn).count("no edit blocks") < 30
