"""Steering by editing across processes (issue 33): a collaborator served by a replica (another
process's rooms, through Redis) edits the line the owner's turn is writing; the owner's room
hears it as any person's update and steers its turn. Set up as in ``test_cluster``."""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.live.replica import Replica
from spark_ide.live.room import Room

from .conftest import Live
from .test_cluster import Process, _collaborator, two  # noqa: F401  (the fixture)
from .test_edit_steer import NEW_ANSWER, SLOW_EDIT, WRITTEN, edit_written_line

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("model_server")]


async def test_an_edit_typed_on_a_replica_steers_the_owner_s_turn(
    live: Live, two: tuple[Process, Process], settings: Any,  # noqa: F811
) -> None:
    settings.SPARK_EDIT_STEER_IDLE_MS = 40
    a, b = two
    driver = await a.connect(live, live.owner_token)
    helper = await b.connect(live, await _collaborator(live, "cole", "collaborator"))
    assert isinstance(a.rooms.held(live.workspace_id), Room)
    assert isinstance(b.rooms.held(live.workspace_id), Replica)
    await driver.send({"type": "prompt", "text": f"[rate:250][say]{SLOW_EDIT}[/say]", "path": "app.py"})
    old = (await driver.until(lambda e: e["type"] == "turn.started"))["turn"]
    await helper.until_true(lambda: WRITTEN in (helper.text("app.py") or ""))
    await edit_written_line(helper)
    for client in (driver, helper):
        steered = await client.until(lambda e: e["type"] == "turn.edit_steered")
        assert (steered["turn"], steered["by"], steered["why"]) == (old, "cole", "idle")
        new = await client.until(lambda e: e["type"] == "turn.started" and e.get("steered_from") == old)
        done = await client.until(lambda e, n=new["turn"]: e["type"] == "turn.finished" and e["turn"] == n)
        assert done["status"] == "completed", done
        assert "".join(e["text"] for e in client.of("turn.delta", new["turn"])) == NEW_ANSWER
    assert "# [say]Kept your edit.[/say]" in (driver.text("app.py") or "")
    await driver.close()
    await helper.close()
