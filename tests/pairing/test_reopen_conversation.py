"""A room that opens again carries on the model's conversation (live.reopen): the past turns
and the last ledger are rebuilt from the turn records, bounded like the live history."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from spark_ide.pairing import adapter
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import RoomEvent, Turn
from spark_ide.pairing.past import stored_past
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.services import workspace_create
from tests.pairing.conftest import Live, LiveClient, connect, say
from tests.support.recording_engine import RecordingEngine


def edit(old: str, new: str) -> str:
    return f'<edit path="util.py">\n<old_text>\n{old}\n</old_text>\n<new_text>\n{new}\n</new_text>\n</edit>\n'


async def turn(client: LiveClient, answer: str, done: list[str]) -> str:
    await client.send({"type": "prompt", "text": say(answer)})
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] not in done)
    done.append(finished["turn"])
    return str(finished["turn"])


async def close_room(live: Live) -> None:
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # everyone left and the room closed (or the server went down)


def conversation(engine: RecordingEngine) -> list[tuple[str, str]]:
    job = engine.generations[-1].job
    assert job is not None
    return [(message.role, message.content) for message in job.messages]


async def test_a_reopened_room_sends_the_earlier_turns_and_the_last_ledger(
    live: Live, model_server: Any, rooms: None,
) -> None:
    engine: RecordingEngine = model_server.engine
    owner = await connect(live)
    done: list[str] = []
    await turn(owner, "First answer: the plan.", done)
    second = await turn(owner, "Second answer.\n" + edit("X = 1", "X = 2"), done)
    assert owner.text("util.py") == "X = 2\n"
    await owner.close()
    await close_room(live)

    owner = await connect(live)  # a new room, a new Pilot: what the database holds is all it has
    await turn(owner, "Third answer.", done)
    messages = conversation(engine)
    said = [content for role, content in messages if role == "assistant"]
    assert any("First answer: the plan." in content for content in said), messages
    assert any("Second answer." in content and "<edit" in content for content in said), messages
    asked = [content for role, content in messages if role == "user"]
    assert any(say("First answer: the plan.") in content for content in asked[:-1]), messages
    # The last turn's ledger: what became of its edit block.
    assert any(f"Edit blocks of turn {second}:" in content for content in asked), messages
    await owner.close()


async def test_a_reopened_room_keeps_the_newest_turns_only(
    live: Live, model_server: Any, rooms: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine: RecordingEngine = model_server.engine
    owner = await connect(live)
    done: list[str] = []
    for number in range(1, 4):
        await turn(owner, f"Answer number {number}.", done)
    await owner.close()
    await close_room(live)

    style = dataclasses.replace(adapter.prompt_style(), history_turns=2)  # the live history's bound, made small
    monkeypatch.setattr(adapter, "prompt_style", lambda: style)
    owner = await connect(live)
    await turn(owner, "Answer number 4.", done)
    said = " ".join(content for role, content in conversation(engine) if role == "assistant")
    assert "Answer number 1." not in said
    assert "Answer number 2." in said and "Answer number 3." in said
    await owner.close()


@pytest.mark.django_db
def test_the_store_reads_the_newest_turns_with_their_chains_after_the_last_restore(django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user(username="ada")
    workspace = workspace_create(owner=owner, name="w", files={"a.py": "a\n"})
    session = session_create(workspace=workspace, by=owner)

    def turn(turn_id: str, status: str, steered_from: str | None = None) -> None:
        Turn.objects.create(
            id=turn_id, session=session, prompt=f"asked {turn_id}", output=f"said {turn_id}", status=status,
            steered_from_id=steered_from, ledger=[{"block": 0}],
        )

    for turn_id, status, steered_from in [
        ("t1", "completed", None), ("t2", "steered", None), ("t3", "steered", "t2"), ("t4", "failed", "t3"),
        ("t5", "completed", None), ("t6", "steered", None), ("t7", "running", None),
    ]:
        turn(turn_id, status, steered_from)
    past = stored_past(workspace.id, turns=2)
    # The newest two that are not steered (t4, t5), t4's chain, and the last to end (t6).
    assert [record.turn for record in past.turns] == ["t2", "t3", "t4", "t5"]
    assert past.last is not None and (past.last.turn, past.last.status) == ("t6", "steered")
    assert past.restored is None
    assert stored_past(workspace.id, turns=0).turns == ()

    # A restore of a conversation: only the turns that started after it count.
    events = [("turn.started", "t8"), ("checkpoint.restored", "t1"), ("turn.started", "t9")]
    for seq, (kind, turn_id) in enumerate(events, start=1):
        data = {"type": kind, "turn": turn_id, "checkpoint": "cp1", "conversation": True}
        RoomEvent.objects.create(workspace=workspace, seq=seq, first_seq=seq, turn=turn_id, kind=kind, data=data)
    turn("t8", "completed")
    turn("t9", "completed")
    past = stored_past(workspace.id, turns=20)
    assert ([record.turn for record in past.turns], past.restored) == (["t9"], "cp1")
    assert past.last is not None and past.last.turn == "t9"
