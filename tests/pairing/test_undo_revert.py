"""Undo revert (`restore`, issue 27): a reverted turn's edits come back for everyone and its
record says so, until the next turn starts; bad asks are refused and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.pairing.models import Turn
from tests.pairing.conftest import FILES, Live, connect, connect_viewer, refused, say

pytestmark = [pytest.mark.django_db(transaction=True)]

EDIT = """<edit path="util.py">
<old_text>
X = 1
</old_text>
<new_text>
X = 2
</new_text>
</edit>
<write path="new.py">
NEW = True
</write>
"""


async def _record(turn: str) -> Turn:
    record: Turn = await database_sync_to_async(Turn.objects.get)(pk=turn)
    return record


async def test_undo_revert_brings_the_turn_back_for_everyone_until_the_next_turn(
    live: Live, model_server: object, rooms: None, django_user_model: Any,
) -> None:
    owner = await connect(live)
    viewer = await connect_viewer(live, django_user_model)
    await owner.send({"type": "prompt", "text": say(EDIT)})
    turn = (await owner.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await owner.send({"type": "revert", "turn": turn})
    await viewer.until(lambda e: e["type"] == "turn.reverted" and e["turn"] == turn)
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 1\n" and viewer.text("new.py") is None)
    assert (await _record(turn)).reverted

    # Bad asks: a viewer; a turn that is not reverted or not of the room. Nothing changes.
    assert (await refused(viewer, {"type": "restore", "turn": turn}))["code"] == "forbidden"
    unknown = await refused(owner, {"type": "restore", "turn": "nope"})
    assert (unknown["code"], unknown["ref"]) == ("restore_unavailable", "nope")
    assert "not a reverted turn of this room" in unknown["message"]
    await owner.pump(0.2)
    assert owner.text("util.py") == "X = 1\n" and owner.text("new.py") is None

    # The owner undoes the revert: the viewer sees the edits and the blocks come back.
    await owner.send({"type": "restore", "turn": turn})
    restored = await viewer.until(lambda e: e["type"] == "turn.restored" and e["turn"] == turn)
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 2\n" and viewer.text("new.py") == "NEW = True\n")
    since = viewer.events[viewer.events.index(viewer.of("turn.reverted", turn)[0]) : viewer.events.index(restored)]
    statuses = [(e["block"], e["state"]) for e in since if e["type"] == "edit.status"]
    assert statuses == [(0, "applied"), (1, "applied")]  # then turn.restored
    record = await _record(turn)
    assert (record.reverted, record.reverted_at) == (False, None)
    again = await refused(owner, {"type": "restore", "turn": turn})  # restored already
    assert again["code"] == "restore_unavailable"

    # Reverted again, then a turn starts: the revert can no longer be undone.
    await owner.send({"type": "revert", "turn": turn})
    await owner.until_true(lambda: len(owner.of("turn.reverted", turn)) == 2)
    await owner.send({"type": "prompt", "text": say("Nothing to change.")})
    await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] != turn)
    late = await refused(owner, {"type": "restore", "turn": turn})
    assert late["code"] == "restore_unavailable"
    assert "a turn has started since it was reverted" in late["message"]
    await owner.pump(0.2)
    assert owner.text("util.py") == FILES["util.py"] and owner.text("new.py") is None
    assert (await _record(turn)).reverted
    await owner.close()
    await viewer.close()


async def test_undo_revert_is_refused_when_its_lines_were_edited_since(
    live: Live, model_server: object, rooms: None,
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(EDIT)})
    turn = (await client.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await client.send({"type": "revert", "turn": turn})
    await client.until(lambda e: e["type"] == "turn.reverted")
    await client.until_true(lambda: client.text("util.py") == "X = 1\n")
    await client.type_text("util.py", len("X = 1"), "  # mine")
    error = await refused(client, {"type": "restore", "turn": turn})
    assert error["code"] == "restore_unavailable"
    assert "the lines its revert changed in util.py were edited since" in error["message"]
    await client.pump(0.2)
    assert client.text("util.py") == "X = 1  # mine\n"
    assert (await _record(turn)).reverted
    await client.close()
