"""A turn applies the model's text in steps (``SPARK_STEP_MS``, ``live.answer``): the first
delta of an answer at once, then at most one step per window, each taking every delta that
arrived meanwhile; nothing is lost, reordered or applied after the turn ended."""

from __future__ import annotations

import asyncio

from spark_ide.live.events import TurnDelta
from tests.support.pilot_rig import pilot_rig
from tests.support.waits import eventually

FILES = {"app.py": "x = 1\n"}
WINDOW_MS = 200.0  # wide enough that a slow machine's scheduling cannot split a step


async def test_the_first_delta_goes_at_once_and_the_rest_of_the_window_goes_as_one_step() -> None:
    async with pilot_rig(FILES, step_ms=WINDOW_MS) as rig:
        turn = rig.prompt("say something")
        stream = await rig.model.next_stream()
        stream.delta("one ")
        await rig.delta_seen(turn, "one ")
        for word in ("two ", "three ", "four "):
            stream.delta(word)
            await asyncio.sleep(0.01)
        assert rig.answer(turn) == "one "  # held for the rest of the window
        await rig.delta_seen(turn, "four ")
        assert [event.text for event in rig.published.of(TurnDelta, turn)] == ["one ", "two three four "]
        stream.complete(None)
        assert (await rig.finished(turn)).status == "completed"


async def test_without_a_window_each_delta_is_a_step_of_its_own() -> None:
    async with pilot_rig(FILES, step_ms=0) as rig:
        turn = rig.prompt("say something")
        stream = await rig.model.next_stream()
        for word in ("one ", "two ", "three "):
            stream.delta(word)
            await rig.delta_seen(turn, word)
        assert [event.text for event in rig.published.of(TurnDelta, turn)] == ["one ", "two ", "three "]
        stream.complete(None)
        await rig.finished(turn)


async def test_a_stop_while_a_step_waits_applies_nothing_more_of_the_answer() -> None:
    async with pilot_rig(FILES, step_ms=WINDOW_MS) as rig:
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
