"""A run of the model is a line of its turn (``turn.ran``, a turn event kept in the room's event
log), so a page that was not there when it ran sees it as the live pages did: a late page's
transcript, a ``resume``, a page of the room opened again, and the session replay.

In this process: our model server in its OpenAI mode plays a ``run`` call (apply-patch
dialect, which offers the run tool), the room runs it in the sandbox on eager Celery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.modelserver.config import ServerConfig
from spark_ide.pairing.adapter import ROOMS
from spark_ide.replay.services import replay_data
from tests.pairing.conftest import Live, LiveClient, connect
from tests.pairing.test_model_runs import run
from tests.support.recording_engine import RecordingEngine, RecordingServer

pytestmark = pytest.mark.services  # the sandbox runs the model's command

KEY = "sk-test-openai-like"
MODEL = "gpt-5.3-codex"
SCRIPTS = {"try": [["Trying it.", run("call_1", "python app.py")], "It runs."]}


@pytest.fixture
async def upstream(live: Live, settings: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RecordingServer]:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=2000.0, ttft_s=0.005)
    config = ServerConfig(port=0, api_key=KEY, cancel_extension=False, model=MODEL)
    async with RecordingServer(engine, config) as server:
        settings.SPARK_EDIT_STYLE = "apply-patch"
        settings.CELERY_TASK_ALWAYS_EAGER = True
        for name, value in {
            "SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": MODEL,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1",
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def ran(client: LiveClient, turn: str) -> list[tuple[str, str, int | None]]:
    return [(e["command"], e["status"], e["exit_code"]) for e in client.of("turn.ran", turn)]


async def test_a_model_runs_line_reaches_a_late_page_a_resume_a_reopened_room_and_the_replay(
    live: Live, upstream: RecordingServer, rooms: None,
) -> None:
    owner = await connect(live)
    await owner.send({"type": "prompt", "text": "[script:try]", "path": "app.py"})
    done = await owner.until(lambda e: e["type"] == "turn.finished", timeout=60)
    turn = done["turn"]
    assert done["status"] == "completed", done
    expected = [("python app.py", "ok", 0)]
    assert ran(owner, turn) == expected  # live, after its run.finished
    ended = next(e for e in owner.events if e["type"] == "run.finished")
    assert owner.events.index(ended) < owner.events.index(owner.of("turn.ran")[0])

    late = await connect(live)  # a page that loads now: its transcript has the line
    await late.until(lambda e: e["type"] == "turn.ran")
    assert ran(late, turn) == expected
    await late.send({"type": "resume", "after": 0})  # a script that asks for what it missed
    await late.until(lambda e: len(late.of("turn.ran")) == 2)
    assert ran(late, turn) == expected * 2

    await owner.close()
    await late.close()
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # the event log is all there is now
    reopened = await connect(live)
    await reopened.until(lambda e: e["type"] == "turn.ran")
    assert ran(reopened, turn) == expected
    await reopened.close()

    data = await database_sync_to_async(replay_data)(live.workspace_id)
    lines = [event for event in data["events"] if event["type"] == "turn.ran"]
    assert [(e["turn"], e["command"], e["status"], e["exit_code"]) for e in lines] == [(turn, *expected[0])]
    [finished] = [event for event in data["events"] if event["type"] == "turn.finished"]
    assert lines[0]["t"] <= finished["t"]
