"""Keep or undo one hunk over the session socket (issue 31): everyone sees the decision
(``edit.reviewed``, replayed to a late joiner), and bad asks — a viewer, a missing block, an
unknown block, a turn of another room — get clear errors and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.services import session_create
from spark_ide.replay.services import replay_data
from spark_ide.workspaces.services import workspace_create
from tests.pairing.conftest import FILES, Live, connect, connect_viewer, refused, say
from tests.pairing.test_undo_revert import EDIT

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_hunk_is_undone_for_everyone_and_bad_asks_change_nothing(
    live: Live, model_server: object, rooms: None, django_user_model: Any,
) -> None:
    owner = await connect(live)
    viewer = await connect_viewer(live, django_user_model)
    await owner.send({"type": "prompt", "text": say(EDIT)})
    turn = (await owner.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 2\n" and viewer.text("new.py") == "NEW = True\n")

    # Bad asks first: nothing changes.
    forbidden = await refused(viewer, {"type": "hunk.undo", "turn": turn, "block": 0})
    assert forbidden["code"] == "forbidden" and "a viewer cannot hunk.undo" in forbidden["message"]
    missing = await refused(owner, {"type": "hunk.undo", "turn": turn})
    assert (missing["code"], missing["ref"]) == ("missing_field", "hunk.undo")
    assert "'hunk.undo' needs 'block'" in missing["message"]
    negative = await refused(owner, {"type": "hunk.keep", "turn": turn, "block": -1})
    assert negative["code"] == "bad_field"
    unknown = await refused(owner, {"type": "hunk.undo", "turn": turn, "block": 5})
    assert (unknown["code"], unknown["ref"]) == ("hunk_unavailable", turn)
    assert f"turn {turn} has no block 5" in unknown["message"]

    # A turn of another room (the owner's other workspace) is unknown here.
    other_ws = await database_sync_to_async(workspace_create)(owner=live.owner, name="other", files=dict(FILES))
    other_session = await database_sync_to_async(session_create)(workspace=other_ws, by=live.owner)
    other = await connect(live, path=f"/ws/sessions/{other_session.id}/")
    await other.send({"type": "prompt", "text": say(EDIT)})
    other_turn = (await other.until(lambda e: e["type"] == "turn.finished"))["turn"]
    elsewhere = await refused(owner, {"type": "hunk.undo", "turn": other_turn, "block": 0})
    assert (elsewhere["code"], elsewhere["ref"]) == ("hunk_unavailable", other_turn)
    assert "has no blocks to review in this room" in elsewhere["message"]
    await owner.pump(0.2)
    assert owner.text("util.py") == "X = 2\n" and owner.text("new.py") == "NEW = True\n"
    assert not owner.of("edit.reviewed") and not other.of("edit.reviewed")
    assert other.text("util.py") == "X = 2\n"

    # The owner undoes block 0 and keeps block 1: both pages see it, and the file follows.
    await owner.send({"type": "hunk.undo", "turn": turn, "block": 0})
    await owner.send({"type": "hunk.keep", "turn": turn, "all": True})
    await viewer.until_true(lambda: len(viewer.of("edit.reviewed", turn)) == 2)
    reviewed = [(e["block"], e["path"], e["decision"], e["by"]) for e in viewer.of("edit.reviewed", turn)]
    assert reviewed == [(0, "util.py", "undone", "ada"), (1, "new.py", "kept", "ada")]
    undone = [e for e in viewer.of("edit.status", turn) if e["block"] == 0][-1]
    assert (undone["state"], undone["detail"]["reason"], undone["detail"]["message"]) == (
        "rolled_back", "undone", "undone by ada",
    )
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 1\n")
    assert viewer.text("new.py") == "NEW = True\n"

    # A late joiner is replayed the decisions.
    late = await connect(live)
    await late.until_true(lambda: len(late.of("edit.reviewed", turn)) == 2)
    for client in (owner, viewer, other, late):
        await client.close()

    # The replay's timeline marks both decisions (a teacher replaying the session sees them).
    room = ROOMS.owned(live.workspace_id)
    if room is not None:
        await room.close()  # its last events are written
    data = await database_sync_to_async(replay_data)(live.workspace_id)
    reviews = [(mark["turn"], mark["text"]) for mark in data["marks"] if mark["kind"] == "review"]
    assert reviews == [(turn, "ada undid util.py · block 1"), (turn, "ada kept new.py · block 2")]
