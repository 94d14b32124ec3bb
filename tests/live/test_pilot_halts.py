"""What stops a turn from outside the model, without Django: storage that stops answering (the
room halts the Pilot; queued prompts wait until it answers again), the security watchdog (it
halts the turn and re-prompts the model with the finding, or stops a model that repeats it),
and a course's AI policy (a quota used up, the AI turned off)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from spark_ide.guard import GuardMode
from spark_ide.live import pipeline
from spark_ide.live.events import (
    EditStatus,
    ErrorCode,
    ErrorEvent,
    Event,
    GuardFinding,
    Policy,
    TurnDelta,
    TurnFinished,
    TurnProse,
    TurnStarted,
)
from spark_ide.live.policy import AiMode, AiPolicy
from spark_ide.live.turns import MERGED_CHARS
from tests.support.pilot_rig import pilot_rig, prompt_of
from tests.support.room_rig import room_rig
from tests.support.waits import eventually

FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}
HALF_BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n'
# No import before the function: nothing completes a top-level block (bandit's, in the scan
# process) before the line that halts.
VULNERABLE = (
    '<write path="users.py">\n'
    "def find(cursor, name):\n"
    "    cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
    "    return cursor.fetchall()\n"
    "</write>\n"
)
FIXED = (
    '<write path="users.py">\n'
    "def find(cursor, name):\n"
    '    cursor.execute("SELECT * FROM users WHERE name = ?", (name,))\n'
    "    return cursor.fetchall()\n"
    "</write>\n"
)


def _lasting(events: Sequence[Event]) -> tuple[list[Event], str, str]:
    """What the stored log must hold of ``events``: every event but a block's progress, which
    the log may merge into the block's next status; and the deltas' and the prose's text (the
    log merges runs of them)."""
    kept = [
        e for e in events
        if not isinstance(e, TurnDelta | TurnProse) and not (isinstance(e, EditStatus) and not e.final)
    ]
    deltas = "".join(e.text for e in events if isinstance(e, TurnDelta))
    prose = "".join(e.text for e in events if isinstance(e, TurnProse))
    return kept, deltas, prose


async def test_storage_that_stops_answering_halts_the_turn_and_the_queue_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "RETRY_LATER_S", (0.02,))  # the room tries its writes again soon
    async with room_rig(FILES, persist_retries=(0.0,)) as rig:
        rig.prompt("change X")
        turn = (await rig.received.until(TurnStarted)).turn
        stream = await rig.model.next_stream()
        rig.store.fail("append_update")
        stream.delta("Changing X.\n")
        stream.delta(HALF_BLOCK)  # changes the document: its update cannot be saved
        rig.prompt("next")

        error = await rig.received.until(ErrorEvent, lambda event: event.code == ErrorCode.STORAGE_FAILED)
        assert "model was stopped" in error.message
        finished = await rig.received.until(TurnFinished, lambda event: event.turn == turn)
        assert (finished.status, finished.reason) == ("failed", "storage_failed")
        assert "could not be saved" in finished.error and "storage is down" in finished.error
        assert rig.model.stopped == [stream]
        # While storage keeps failing (the room has tried again since), the queued prompt waits.
        tries = rig.store.calls.count("append_update")
        await eventually(lambda: rig.store.calls.count("append_update") >= tries + 3)
        assert rig.room.pilot.running_turn is None and rig.room.pilot.busy
        assert len(rig.model.requests) == 1

        rig.store.heal()
        await rig.received.until(TurnStarted, lambda event: event.prompt == "next")
        assert rig.room.texts() == FILES  # the half block was rolled back
        await eventually(lambda: rig.store.texts() == rig.room.texts())  # and nothing is lost


async def test_a_turn_through_the_room_is_saved_sent_and_logged() -> None:
    async with room_rig(FILES, log_batch_s=0.0) as rig:
        rig.prompt("change X")
        turn = (await rig.received.until(TurnStarted)).turn
        stream = await rig.model.next_stream()
        stream.delta(HALF_BLOCK + "</new_text>\n</edit>\n")
        stream.complete(None)
        await rig.received.until(TurnFinished, lambda event: event.turn == turn)
        assert rig.room.texts()["util.py"] == "X = 2\n"
        assert rig.received.updates  # each document change went out once saved
        await eventually(lambda: rig.store.texts() == rig.room.texts())
        await rig.room.files.store_events()
        logged = [entry.event for entry in rig.store.events]
        assert _lasting(logged) == _lasting([event for event in rig.turn_events() if not event.ephemeral])
        await eventually(lambda: rig.store.turns[turn].outcome is not None)
        assert rig.store.outcome(turn).reason == "answered"


async def test_the_watchdog_halts_a_flaw_as_it_is_written_and_re_prompts_the_model_with_it() -> None:
    async with pilot_rig(FILES, guard_mode=GuardMode.HALT) as rig:
        turn = rig.prompt("write find")
        stream = await rig.model.next_stream()
        stream.delta(VULNERABLE)
        for line in range(100):  # more of the answer (9 KB), waiting behind the halting line
            stream.delta(f"# more of the answer, line {line:02}: " + "x" * 60 + "\n")
        halted = await rig.published.until(GuardFinding, lambda event: event.action == "halted")
        assert (halted.turn, halted.rule, halted.path, halted.line) == (turn, "sql-format", "users.py", 2)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason, finished.by) == ("steered", "guard_halt", "watchdog")
        # The answer is not read past the step that halted (what waited went in that one step:
        # whole deltas, up to the one that passes MERGED_CHARS).
        more = len(f"# more of the answer, line 00: {'x' * 60}\n")
        assert "line 99" not in rig.answer(turn) and len(rig.answer(turn)) <= len(VULNERABLE) + MERGED_CHARS + more
        assert "fetchall" not in rig.texts().get("users.py", "")  # nothing past the halting line
        assert "users.py" not in rig.texts()  # its block was rolled back
        correction = await rig.started(lambda event: event.steered_from == turn)
        assert correction.turn == halted.correction and correction.author == "watchdog"
        successor = await rig.model.next_stream()
        assert "security watchdog stopped you" in prompt_of(successor.request)
        assert rig.model.stopped == [stream]

        successor.delta(FIXED)
        successor.complete(None)
        done = await rig.finished(correction.turn)
        assert (done.status, done.reason) == ("completed", "answered")
        assert '"SELECT * FROM users WHERE name = ?", (name,)' in rig.texts()["users.py"]


async def test_a_model_that_writes_the_flaw_again_after_its_corrections_is_stopped() -> None:
    async with pilot_rig(FILES, guard_mode=GuardMode.HALT) as rig:
        turn = rig.prompt("write find")
        for ended in range(1, 4):  # the first answer and its two corrections (GuardSettings.max_corrections)
            (await rig.model.next_stream()).delta(VULNERABLE)
            await rig.ended(ended)
        ends = rig.published.of(TurnFinished)
        assert [end.reason for end in ends] == ["guard_halt"] * 3
        assert [end.status for end in ends] == ["steered", "steered", "cancelled"]
        assert "after 2 corrections" in ends[-1].error
        assert ends[0].turn == turn and "users.py" not in rig.texts()
        assert rig.pilot.running_turn is None


async def test_a_used_up_quota_refuses_the_prompt_and_says_so() -> None:
    async with pilot_rig(FILES, policy=AiPolicy(token_quota=1_000, tokens_used=1_000)) as rig:
        rig.prompt("one")
        await eventually(lambda: bool(rig.replies))
        assert rig.replies[0].code == ErrorCode.AI_QUOTA and "1,000" in rig.replies[0].message
        shown = await rig.announced.until(Policy)
        assert (shown.token_quota, shown.tokens_left) == (1_000, 0)
        assert rig.published.of(TurnStarted) == [] and rig.model.requests == []


async def test_a_turn_passing_the_quota_is_stopped_and_the_next_prompt_refused() -> None:
    async with pilot_rig(FILES, policy=AiPolicy(token_quota=1_030, tokens_used=1_000)) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        for index in range(60):
            stream.delta(f"w{index} ")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("cancelled", "quota")
        assert 30 <= int(finished.metrics["tokens"] or 0) <= 31  # stopped at the quota
        assert rig.model.stopped == [stream]
        rig.prompt("two")
        await eventually(lambda: bool(rig.replies))
        assert rig.replies[0].code == ErrorCode.AI_QUOTA
        assert len(rig.published.of(TurnStarted)) == 1


async def test_the_ai_turned_off_refuses_prompts_and_steers() -> None:
    async with pilot_rig(FILES, policy=AiPolicy(mode=AiMode.OFF)) as rig:
        rig.prompt("one")
        rig.steer("two")
        await eventually(lambda: len(rig.replies) == 2)
        assert {reply.code for reply in rig.replies} == {ErrorCode.AI_DISABLED}
        assert rig.published.items == [] and rig.model.requests == []
