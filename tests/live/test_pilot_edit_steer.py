"""A steer by editing in the Pilot without Django (issue 33): it goes the way of a steer, so a
model's run still going is stopped too; it is published first (``turn.edit_steered``); and one
for a turn that has ended meanwhile does nothing (no new turn starts from it). The model is the
fake; the run is in the real sandbox."""

from __future__ import annotations

from spark_ide.live.events import RunStarted, TurnEditSteered, TurnStarted
from spark_ide.live.turns import CommandKind
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import pilot_rig, prompt_of
from tests.support.sandbox_runner import SandboxRunner

from .test_pilot_runs import FILES, TOOLS, run_call, run_ended, runner  # noqa: F401  (the fixture)


def note(turn: str) -> TurnEditSteered:
    return TurnEditSteered(turn=turn, path="app.py", lines=(5, 5), by="ada", diff="-a\n+b\n", why="idle")


async def test_a_steer_by_editing_during_a_run_stops_it(runner: SandboxRunner) -> None:  # noqa: F811
    files = {**FILES, "forever.py": "import time\nwhile True:\n    time.sleep(0.1)\n"}
    async with pilot_rig(files, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("run forever.py")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python forever.py"))
        stream.complete(None)
        started = await rig.announced.until(RunStarted)
        rig.command(CommandKind.EDIT_STEER, text="ada edited what you were writing", note=note(turn))
        assert (await run_ended(rig, started.run)).status == "killed"
        assert (await rig.finished(turn)).status == "steered"
        assert rig.published.of(TurnEditSteered) == [note(turn)]
        new = await rig.started(lambda event: event.steered_from == turn)
        await rig.model.next_stream()
        assert "ada edited what you were writing" in prompt_of(rig.model.requests[1])
        assert new.turn != turn


async def test_one_for_a_turn_that_ended_does_nothing(runner: SandboxRunner) -> None:  # noqa: F811
    async with pilot_rig(FILES, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("say hi")
        stream = await rig.model.next_stream()
        stream.complete(None)
        await rig.finished(turn)
        rig.command(CommandKind.EDIT_STEER, text="too late", note=note(turn))
        rig.prompt("next")
        await rig.model.next_stream()
        assert len(rig.published.of(TurnStarted)) == 2 and not rig.published.of(TurnEditSteered)
        assert "too late" not in prompt_of(rig.model.requests[-1])
