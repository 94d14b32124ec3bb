"""The room's model switched under a running Pilot (issue 34, ``live.room_models``), without
Django: each catalogue entry reached through a fake model of its own. The room's model is warmed
at start; a switch connects the new one at once (no prompt yet) and tells everyone; the running
turn finishes on its model, which then closes; the next turn runs on the new model, in its own
style (dialect, output ceiling), and each turn's record names its model."""

from __future__ import annotations

from spark_ide.live.events import ModelChosen
from spark_ide.live.prompting import PromptStyle
from spark_ide.upstream import EditStyle, ModelClient
from spark_ide.upstream.catalogue import ModelEntry
from tests.support.fake_model import FakeModel
from tests.support.memory_store import MemoryRoomStore
from tests.support.pilot_rig import pilot_rig
from tests.support.waits import eventually

FILES = {"app.py": "x = 1\n"}
SMALL = ModelEntry(name="small", provider="local", base_url="http://127.0.0.1:1/v1", model="smollm2")
BIG = ModelEntry(name="big", provider="local", base_url="http://127.0.0.1:2/v1", model="big-coder")
STYLES = {
    "small": PromptStyle.small_model(context_tokens=2500, max_output_tokens=600),
    "big": PromptStyle(edit_style=EditStyle.EDITS, max_output_tokens=5000),
}


async def test_a_switch_warms_the_new_model_at_once_and_the_next_turn_runs_on_it() -> None:
    fakes = {"small": FakeModel(), "big": FakeModel()}

    async def connect(entry: ModelEntry, instructions: str) -> ModelClient:
        return await fakes[entry.name].connect(instructions)

    store = MemoryRoomStore(files=dict(FILES))
    store.entry = SMALL
    async with pilot_rig(FILES, store=store, connect_entry=connect, style_for=lambda e: STYLES[e.name]) as rig:
        small, big = fakes["small"], fakes["big"]
        await eventually(lambda: small.connects == 1)  # the room's model, warmed before any prompt
        assert rig.announced.of(ModelChosen) == [ModelChosen(name="small", provider="local", model="smollm2")]
        first = rig.prompt("one")
        running = await small.next_stream()
        assert small.requests[0].max_output_tokens == 600 and small.requests[0].edit_style is EditStyle.WHOLE_FILE

        store.entry = BIG
        rig.pilot.model_changed()
        await rig.announced.until(ModelChosen, lambda event: event.name == "big")
        await eventually(lambda: big.connects == 1)  # at the switch, not at the next prompt
        assert not big.requests and small.closed == 0  # the running turn keeps its model
        running.delta("Done.\n")
        running.complete(None)
        await rig.finished(first)
        await eventually(lambda: small.closed == 1)  # closed once no turn runs on it

        second = rig.prompt("two")
        await big.next_stream()
        assert len(small.requests) == 1 and big.connects == 1
        assert big.requests[0].max_output_tokens == 5000 and big.requests[0].edit_style is EditStyle.EDITS
        await rig.recorded(first)
        await eventually(lambda: second in store.turns)
        assert (store.turns[first].record.model, store.turns[second].record.model) == ("small", "big")


async def test_a_room_without_a_catalogue_runs_on_its_settings_model() -> None:
    async with pilot_rig(FILES) as rig:
        await eventually(lambda: rig.model.connects == 1)
        assert rig.pilot.models.current.entry is None and rig.pilot.models.chosen() is None
        rig.pilot.model_changed()  # nothing to switch to: the link stays
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.complete(None)
        await rig.finished(turn)
        assert rig.model.connects == 1 and rig.store.turns[turn].record.model == ""
