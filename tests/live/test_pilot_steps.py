"""A turn applies the model's text in steps (``live.steps``, ``SPARK_STEP_MS``): alone in the
process, a step per delta; with other answers streaming, the first delta of an answer at once,
then at most one step per window, each taking every delta that arrived meanwhile. Nothing is
lost, reordered or applied after the turn ended."""

from __future__ import annotations

import asyncio

from spark_ide.live.events import TurnDelta
from spark_ide.live.steps import Steps
from tests.support.pilot_rig import pilot_rig
from tests.support.waits import eventually

FILES = {"app.py": "x = 1\n"}
WINDOW_MS = 200.0  # wide enough that a slow machine's scheduling cannot split a step


def test_the_window_widens_with_the_answers_streaming_up_to_its_most() -> None:
    steps = Steps(4.0)
    windows = []
    with steps.answer():
        windows.append(steps.window_s())
        with steps.answer():
            windows.append(steps.window_s())
            with steps.answer(), steps.answer(), steps.answer(), steps.answer(), steps.answer():
                windows.append(steps.window_s())
    assert windows == [0.0, 0.001, 0.004] and steps.streaming == 0
    off = Steps(0.0)
    with off.answer(), off.answer(), off.answer():
        assert off.window_s() == 0.0


async def test_beside_another_answer_the_first_delta_goes_at_once_and_the_rest_of_the_window_as_one_step() -> None:
    steps = Steps(WINDOW_MS, per_answer_ms=WINDOW_MS)
    async with pilot_rig(FILES, steps=steps) as rig:
        with steps.answer():  # another room's answer streams meanwhile
            turn = rig.prompt("say something")
            stream = await rig.model.next_stream()
            stream.delta("one ")
            await rig.delta_seen(turn, "one ")
            assert steps.streaming == 2
            for word in ("two ", "three ", "four "):
                stream.delta(word)
                await asyncio.sleep(0.01)
            assert rig.answer(turn) == "one "  # held for the rest of the window
            await rig.delta_seen(turn, "four ")
            assert [event.text for event in rig.published.of(TurnDelta, turn)] == ["one ", "two three four "]
            stream.complete(None)
            assert (await rig.finished(turn)).status == "completed"
    assert steps.streaming == 0


async def test_alone_in_the_process_each_delta_is_a_step_of_its_own() -> None:
    steps = Steps(WINDOW_MS, per_answer_ms=WINDOW_MS)
    async with pilot_rig(FILES, steps=steps) as rig:
        turn = rig.prompt("say something")
        stream = await rig.model.next_stream()
        for word in ("one ", "two ", "three "):
            stream.delta(word)
            await rig.delta_seen(turn, word)
        assert [event.text for event in rig.published.of(TurnDelta, turn)] == ["one ", "two ", "three "]
        stream.complete(None)
        await rig.finished(turn)


async def test_a_stop_while_a_step_waits_applies_nothing_more_of_the_answer() -> None:
    steps = Steps(WINDOW_MS, per_answer_ms=WINDOW_MS)
    async with pilot_rig(FILES, steps=steps) as rig:
        with steps.answer():
            turn = rig.prompt("write it")
            stream = await rig.model.next_stream()
            stream.delta('<write path="b.py">\n')
            await rig.delta_seen(turn, "b.py")
            stream.delta("b = 1\n")  # waits for the window
            rig.stop()
            finished = await rig.finished(turn)
            assert finished.status == "cancelled"
            await asyncio.sleep(WINDOW_MS / 1000 * 1.5)
            assert "b = 1" not in rig.answer(turn)
            assert "b.py" not in rig.texts()
            await eventually(lambda: rig.model.stopped == [stream])
    assert steps.streaming == 0
