"""The Pilot's turns without Django: start, queue, stop, revert and restore, against the room's
storage in memory (``tests/support/memory_store.py``) and the fake model. Each turn takes
milliseconds; nothing here opens a database or a socket."""

from __future__ import annotations

from spark_ide.live.events import (
    ErrorCode,
    HistoryChanged,
    TurnFinished,
    TurnQueued,
    TurnRestored,
    TurnReverted,
    TurnStarted,
)
from spark_ide.upstream import Message, Usage
from tests.support.pilot_rig import pilot_rig, prompt_of
from tests.support.waits import eventually

FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}
BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n</new_text>\n</edit>\n'
HALF_BLOCK = '<edit path="app.py">\n<old_text>\n    return a + b\n</old_text>\n<new_text>\n    return b + a\n'


async def test_a_turn_publishes_its_answer_and_edits_in_order_and_is_recorded() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        started = await rig.started()
        assert (started.turn, started.prompt, started.author, started.steered_from) == (turn, "change X", "ada", None)
        assert rig.pilot.running_turn == turn and rig.pilot.busy
        request = prompt_of(rig.model.requests[0])
        assert "Request: change X" in request and '<file path="util.py">\nX = 1\n</file>' in request

        stream.delta("Changing X.\n")
        stream.delta(BLOCK[:40])
        await rig.delta_seen(turn, BLOCK[:40])
        stream.delta(BLOCK[40:])
        stream.complete(Usage(input_tokens=120, output_tokens=9))
        finished = await rig.finished(turn)

        assert (finished.status, finished.reason, finished.error) == ("completed", "answered", "")
        assert finished.metrics["tokens"] == 9  # the provider's count
        assert rig.answer(turn) == "Changing X.\n" + BLOCK
        assert rig.states(turn)[0] == "locating" and rig.states(turn)[-1] == "applied"
        assert rig.texts() == {**FILES, "util.py": "X = 2\n"}
        mine = [event for event in rig.published.items if getattr(event, "turn", None) == turn]
        assert isinstance(mine[0], TurnStarted) and mine[-1] is finished  # nothing of it after its end
        assert rig.pilot.running_turn is None and not rig.pilot.busy

        await rig.recorded(turn)
        stored = rig.store.turns[turn]
        record = stored.record
        assert (record.session, record.author_id, record.prompt, record.active_path) == ("s1", 7, "change X", "util.py")
        outcome = rig.store.outcome(turn)
        assert (outcome.status, outcome.reason, outcome.output) == ("completed", "answered", "Changing X.\n" + BLOCK)
        assert [(entry["path"], entry["outcome"]) for entry in outcome.ledger] == [("util.py", "applied")]
        assert "-X = 1\n+X = 2\n" in outcome.diff["util.py"]
        assert outcome.metrics["tokens"] == 9


async def test_an_answer_without_edits_ends_with_no_changes() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("what does add do?")
        stream = await rig.model.next_stream()
        stream.delta("It adds two numbers.\n")
        stream.complete(None)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "no_changes")
        assert rig.texts() == FILES


async def test_prompts_sent_while_a_turn_runs_wait_in_order_and_each_starts_after_the_last_ends() -> None:
    async with pilot_rig(FILES) as rig:
        first = rig.prompt("one")
        stream = await rig.model.next_stream()
        second, third = rig.prompt("two"), rig.prompt("three")
        queued = await rig.published.until(TurnQueued, lambda event: event.turn == third)
        assert [(event.turn, event.position) for event in rig.published.of(TurnQueued)] == [(second, 1), (third, 2)]
        assert queued.prompt == "three" and len(rig.model.requests) == 1  # nothing else reached the model

        for turn, answer in ((first, "answer one"), (second, "answer two"), (third, "answer three")):
            if turn != first:
                stream = await rig.model.next_stream()
            stream.delta(answer)
            stream.complete(None)
            await rig.finished(turn)

        starts = rig.published.of(TurnStarted)
        assert [(event.turn, event.prompt) for event in starts] == [(first, "one"), (second, "two"), (third, "three")]
        ends = rig.published.of(TurnFinished)
        for start, end_before in zip(starts[1:], ends, strict=False):
            assert rig.published.index(end_before) < rig.published.index(start)  # one turn at a time
        assert "Request: three" in prompt_of(rig.model.requests[2])
        past = [item.text for item in rig.model.requests[2].conversation[:-1] if isinstance(item, Message)]
        assert any("answer two" in text for text in past)  # the turns before are its history
        assert not rig.pilot.busy


async def test_stop_ends_the_turn_rolls_back_its_open_block_stops_the_model_and_starts_the_next() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("swap")
        stream = await rig.model.next_stream()
        stream.delta("Swapping.\n")
        stream.delta(HALF_BLOCK)
        await eventually(lambda: "streaming" in rig.states(turn))
        assert rig.texts()["app.py"] != FILES["app.py"]  # the block is being written into the file
        waiting = rig.prompt("next")
        rig.stop()
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason, finished.by) == ("cancelled", "stopped", "ada")
        assert rig.states(turn)[-1] == "rolled_back"
        assert rig.texts() == FILES
        assert rig.model.stopped == [stream]  # the generation is stopped upstream
        stream.delta("written after the stop")
        await rig.started(lambda event: event.turn == waiting)
        assert "after the stop" not in rig.answer(turn)
        await rig.recorded(turn)
        assert (rig.store.outcome(turn).status, rig.store.outcome(turn).reason) == ("cancelled", "stopped")


async def test_stop_with_nothing_running_changes_nothing() -> None:
    async with pilot_rig(FILES) as rig:
        rig.stop()
        turn = rig.prompt("hello")
        (await rig.model.next_stream()).complete(None)
        assert (await rig.finished(turn)).status == "completed"
        assert len(rig.published.of(TurnFinished)) == 1


async def test_a_revert_takes_a_finished_turn_back_and_a_restore_puts_it_back() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X")
        stream = await rig.model.next_stream()
        stream.delta(BLOCK)
        stream.complete(None)
        await rig.finished(turn)
        assert rig.texts()["util.py"] == "X = 2\n"

        rig.revert(turn)
        await rig.published.until(TurnReverted, lambda event: event.turn == turn)  # once recorded
        assert rig.texts() == FILES
        assert rig.store.turns[turn].reverted

        rig.restore(turn)
        await rig.published.until(TurnRestored, lambda event: event.turn == turn)
        assert rig.texts()["util.py"] == "X = 2\n"
        assert not rig.store.turns[turn].reverted
        assert rig.replies == []


async def test_a_revert_can_be_undone_only_until_the_next_turn_starts() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X")
        stream = await rig.model.next_stream()
        stream.delta(BLOCK)
        stream.complete(None)
        await rig.finished(turn)
        rig.revert(turn)
        await rig.published.until(TurnReverted)
        later = rig.prompt("something else")
        (await rig.model.next_stream()).complete(None)
        await rig.finished(later)

        rig.restore(turn)
        await eventually(lambda: bool(rig.replies))
        assert rig.replies[0].code == ErrorCode.RESTORE_UNAVAILABLE and "next turn" in rig.replies[0].message
        assert rig.texts() == FILES and rig.store.turns[turn].reverted
        assert rig.published.of(TurnRestored) == []


async def test_reverting_the_running_turn_ends_it_and_takes_back_all_it_wrote() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change both")
        stream = await rig.model.next_stream()
        stream.delta(BLOCK)
        stream.delta(HALF_BLOCK)
        await eventually(lambda: rig.states(turn).count("applied") == 1 and rig.states(turn)[-1] == "streaming")
        rig.revert(turn)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason, finished.by) == ("cancelled", "reverted", "ada")
        await rig.published.until(TurnReverted, lambda event: event.turn == turn)
        assert rig.texts() == FILES  # the applied block and the one in flight
        assert rig.model.stopped == [stream]
        await eventually(lambda: rig.store.turns[turn].reverted)
        assert rig.store.outcome(turn).reason == "reverted"


async def test_a_revert_of_an_unknown_turn_is_refused_to_the_one_who_asked() -> None:
    async with pilot_rig(FILES) as rig:
        rig.revert("no-such-turn")
        await eventually(lambda: bool(rig.replies))
        assert rig.replies[0].code == ErrorCode.REVERT_UNAVAILABLE and rig.replies[0].ref == "no-such-turn"
        assert rig.published.items == []


async def test_once_a_turns_record_is_stored_every_page_is_told_after_its_end() -> None:
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("change X", path="util.py")
        stream = await rig.model.next_stream()
        stream.delta(BLOCK)
        stream.complete(None)
        finished = await rig.finished(turn)
        recorded = await rig.announced.until(HistoryChanged, lambda event: event.turn == turn)
        assert recorded.payload() == {"type": "history.changed", "turn": turn}
        # Told when the record holds the turn's end and its diff (what the history panel shows).
        outcome = rig.store.outcome(turn)
        assert outcome.status == finished.status.value and "+X = 2" in outcome.diff["util.py"]
        assert len(rig.announced.of(HistoryChanged)) == 1
