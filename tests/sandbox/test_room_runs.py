"""A run's record never stays ``running``: a room that closes while a run streams stops and
records it, and a run an earlier owner of the room lost (its process died) is recorded failed
when the room next runs something. Both show in the session's history."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from spark_ide.live.runs import ROOM_CLOSED
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Run
from spark_ide.pairing.services import RUN_OWNER_LOST
from tests.pairing.conftest import Live, connect, live, rooms  # noqa: F401  (fixtures)

# The services pass runs it again: the run records, stored.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

TICK_THEN_WAIT = "import time\nprint('tick')\ntime.sleep(60)\n"


@pytest.fixture(autouse=True)
def eager(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


def history(session: Live) -> str:
    browser = Client()
    browser.force_login(session.owner)
    return str(browser.get(f"/sessions/{session.session_id}/history").content.decode())


async def test_lost_and_interrupted_runs_are_recorded_and_shown(live: Live, rooms: None) -> None:  # noqa: F811
    # An earlier owner of the room died while this ran: its record says running.
    await database_sync_to_async(Run.objects.create)(id="lost1", session_id=live.session_id, path="app.py")
    owner = await connect(live)
    await owner.send({"type": "run", "path": "app.py"})
    await owner.until(lambda e: e["type"] == "run.finished")
    lost = await database_sync_to_async(Run.objects.get)(pk="lost1")
    assert (lost.status, lost.message) == ("failed", RUN_OWNER_LOST) and lost.finished_at is not None

    # The room closes while a run streams: it is stopped and recorded with the reason.
    await owner.type_text("util.py", 0, TICK_THEN_WAIT)
    await owner.send({"type": "run", "path": "util.py"})
    run = (await owner.until(lambda e: e["type"] == "run.started" and e["path"] == "util.py"))["run"]
    await owner.until(lambda e: e["type"] == "run.output" and "tick" in e["text"])
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()
    record = await database_sync_to_async(Run.objects.get)(pk=run)
    assert (record.status, record.message, record.exit_code) == ("killed", ROOM_CLOSED, None)
    assert "tick" in record.output and record.finished_at is not None
    assert not await database_sync_to_async(Run.objects.filter(status=Run.RUNNING).exists)()

    page = await database_sync_to_async(history)(live)
    assert RUN_OWNER_LOST in page and ROOM_CLOSED in page
    assert 'data-run="lost1"' in page and f'data-run="{run}"' in page
    await owner.close()
