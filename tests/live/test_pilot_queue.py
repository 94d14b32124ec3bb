"""The room's prompt queue (``live.prompt_queue``) through the Pilot, without Django: every
change is announced as a ``queue`` event, the prompts run in the queue's order, a change
naming a prompt not queued changes nothing, and the 51st prompt is refused."""

from __future__ import annotations

from typing import Any

from spark_ide.live.events import ErrorCode, QueueState, TurnFinished, TurnQueued, TurnStarted
from spark_ide.live.prompt_queue import MAX_MERGED_CHARS, MAX_QUEUED
from spark_ide.live.turns import CommandKind
from tests.support.pilot_rig import PilotRig, pilot_rig, prompt_of
from tests.support.waits import eventually

FILES = {"app.py": "X = 1\n"}


def queue_of(rig: PilotRig) -> list[tuple[str, str, int]]:
    """The last announced queue: (turn, prompt, position) of each item."""
    states = rig.announced.of(QueueState)
    return [(item.turn, item.prompt, item.position) for item in states[-1].items] if states else []


async def settled(rig: PilotRig, count: int) -> None:
    """Wait until ``count`` queue states have been announced (each change announces one)."""
    await eventually(lambda: len(rig.announced.of(QueueState)) >= count, 5.0)


async def queued_behind_a_turn(rig: PilotRig, *texts: str) -> tuple[Any, list[str]]:
    """A running turn (its stream) and ``texts`` queued behind it (their turn ids)."""
    rig.prompt("running")
    stream = await rig.model.next_stream()
    turns = [rig.prompt(text) for text in texts]
    await rig.published.until(TurnQueued, lambda event: event.turn == turns[-1])
    return stream, turns


async def run_out(rig: PilotRig, stream: Any, count: int) -> list[str]:
    """Finish the running turn and the ``count`` turns after it; the prompts they started with."""
    for index in range(count + 1):
        if index:
            stream = await rig.model.next_stream()
        stream.complete(None)
        await rig.ended(index + 1)
    return [event.prompt for event in rig.published.of(TurnStarted)[1:]]


async def test_every_change_is_announced_and_the_prompts_run_in_the_queue_order() -> None:
    async with pilot_rig(FILES) as rig:
        stream, (a, b, c) = await queued_behind_a_turn(rig, "a", "b", "c")
        await settled(rig, 3)
        assert queue_of(rig) == [(a, "a", 1), (b, "b", 2), (c, "c", 3)]
        assert [item.author for item in rig.announced.of(QueueState)[-1].items] == ["ada"] * 3

        rig.command(CommandKind.QUEUE_EDIT, turn=b, text="b edited", author="bob")
        rig.command(CommandKind.QUEUE_MOVE, turn=c, position=1)
        await settled(rig, 5)
        assert queue_of(rig) == [(c, "c", 1), (a, "a", 2), (b, "b edited", 3)]

        rig.command(CommandKind.QUEUE_DELETE, turn=a)
        await settled(rig, 6)
        assert queue_of(rig) == [(c, "c", 1), (b, "b edited", 2)]
        assert rig.replies == []

        assert await run_out(rig, stream, 2) == ["c", "b edited"]
        assert [event.turn for event in rig.published.of(TurnStarted)[1:]] == [c, b]
        assert queue_of(rig) == [] and not rig.pilot.busy
        assert "Request: b edited" in prompt_of(rig.model.requests[-1])


async def test_merge_makes_one_prompt_at_the_first_ones_place() -> None:
    async with pilot_rig(FILES) as rig:
        stream, (a, b, c) = await queued_behind_a_turn(rig, "a", "b", "c")
        rig.command(CommandKind.QUEUE_MERGE, turns=(c, a))  # joined in queue order, at a's place
        await settled(rig, 4)
        assert queue_of(rig) == [(a, "a\n\nc", 1), (b, "b", 2)]
        assert await run_out(rig, stream, 2) == ["a\n\nc", "b"]
        assert len(rig.model.requests) == 3  # the running one, the merged one, b


async def test_steer_now_takes_a_prompt_out_of_the_queue_and_steers_with_it() -> None:
    async with pilot_rig(FILES) as rig:
        _, (a, b) = await queued_behind_a_turn(rig, "a", "b")
        first = rig.published.of(TurnStarted)[0].turn
        rig.command(CommandKind.QUEUE_STEER, turn=b, author="bob")
        started = await rig.started(lambda event: event.turn == b)
        assert (started.prompt, started.author, started.steered_from) == ("b", "bob", first)
        assert (await rig.finished(first)).status == "steered"
        assert queue_of(rig) == [(a, "a", 1)]


async def test_a_change_naming_a_prompt_not_queued_is_refused_and_changes_nothing() -> None:
    async with pilot_rig(FILES) as rig:
        _, (a, b) = await queued_behind_a_turn(rig, "a", "b")
        await settled(rig, 2)
        rig.command(CommandKind.QUEUE_EDIT, turn="nosuchturn", text="x")
        rig.command(CommandKind.QUEUE_MERGE, turns=(a, "nosuchturn"))
        rig.command(CommandKind.QUEUE_DELETE, turn=rig.published.of(TurnStarted)[0].turn)  # running, not queued
        rig.command(CommandKind.QUEUE_MOVE, turn=a, position=3)  # beyond the queue's end
        rig.command(CommandKind.QUEUE_MERGE, turns=(a, a))  # one prompt is nothing to merge
        await eventually(lambda: len(rig.replies) == 5, 5.0)
        assert [reply.code for reply in rig.replies] == [
            ErrorCode.NOT_QUEUED, ErrorCode.NOT_QUEUED, ErrorCode.NOT_QUEUED, ErrorCode.BAD_FIELD, ErrorCode.BAD_FIELD,
        ]
        assert "'nosuchturn'" in rig.replies[0].message and "nothing changed" in rig.replies[0].message
        assert len(rig.announced.of(QueueState)) == 2 and queue_of(rig) == [(a, "a", 1), (b, "b", 2)]


async def test_at_most_fifty_prompts_wait_and_the_next_is_refused_queue_full() -> None:
    async with pilot_rig(FILES) as rig:
        stream, turns = await queued_behind_a_turn(rig, *(f"p{n}" for n in range(MAX_QUEUED)))
        extra = rig.prompt("one too many")
        await eventually(lambda: len(rig.replies) == 1, 5.0)
        refused = rig.replies[0]
        assert (refused.code, refused.ref) == (ErrorCode.QUEUE_FULL, extra)
        assert f"at most {MAX_QUEUED}" in refused.message
        assert len(queue_of(rig)) == MAX_QUEUED and not rig.published.of(TurnQueued, extra)
        stream.complete(None)
        await rig.started(lambda event: event.turn == turns[0])
        assert len(queue_of(rig)) == MAX_QUEUED - 1  # room again for one
        assert not rig.published.of(TurnFinished, extra)


async def test_a_merge_longer_than_one_prompt_may_be_is_refused_too_long() -> None:
    async with pilot_rig(FILES) as rig:
        half = "x" * (MAX_MERGED_CHARS // 2)
        _, (a, b) = await queued_behind_a_turn(rig, half, half)
        rig.command(CommandKind.QUEUE_MERGE, turns=(a, b))
        await eventually(lambda: len(rig.replies) == 1, 5.0)
        assert rig.replies[0].code == ErrorCode.TOO_LONG and f"{MAX_MERGED_CHARS}" in rig.replies[0].message
        assert [turn for turn, _, _ in queue_of(rig)] == [a, b]
