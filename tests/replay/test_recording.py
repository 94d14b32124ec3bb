"""A room's history as it is stored: every turn event with its time, the document's updates
kept through compaction, and the document rebuilt from them at any moment is the one the
room had then (a real room, the scripted model, the database)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from channels.db import database_sync_to_async
from pycrdt import Doc

from spark_ide.editing.document import document_texts
from spark_ide.live.event_log import now_ms
from spark_ide.live.room import Room
from spark_ide.modelserver.engines.scripted import ScriptedEngine, split_tokens
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import RoomEvent
from spark_ide.replay.models import Checkpoint, HistoryUpdate
from spark_ide.replay.services import replay_data
from spark_ide.workspaces.models import DocumentUpdate
from tests.pairing.conftest import Live, LiveClient, connect, say
from tests.pairing.test_steer_stop import FIRST_BLOCK, SECOND_BLOCK, STEERED
from tests.replay.conftest import document_at

# The services pass runs it again: the stored event log and document history.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def stored_bytes(workspace_id: uuid.UUID, *, since: int = 0) -> dict[str, int]:
    """What a workspace's replay takes in storage from ``since`` (ms since the Unix epoch) on,
    in bytes of content: the turn events (their JSON, times, seq and names), the document
    updates (live log and history) and the checkpoints (docs/replay.md: bytes per 1,000 tokens)."""
    events = RoomEvent.objects.filter(workspace_id=workspace_id, at__gte=since)
    event_bytes = sum(
        len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
        + len(kind) + len(turn) + 8 * (3 + (until is not None))  # seq, first_seq, at (+ until)
        for data, kind, turn, until in events.values_list("data", "kind", "turn", "until")
    )
    since_at = datetime.fromtimestamp(since / 1000, tz=UTC)
    live = DocumentUpdate.objects.filter(workspace_id=workspace_id, created_at__gte=since_at)
    moved = HistoryUpdate.objects.filter(workspace_id=workspace_id, at__gte=since)
    updates = [*live.values_list("data", flat=True), *moved.values_list("data", flat=True)]
    checkpoints = Checkpoint.objects.filter(workspace_id=workspace_id, at__gte=since).values_list("state", flat=True)
    return {
        "events": event_bytes,
        "updates": sum(len(data) + 16 for data in updates),  # id, at
        "checkpoints": sum(len(state) + 24 for state in checkpoints),  # id, through, at
    }

# A turn of about 1,000 tokens as a model writes one: prose, a new file, an edit, prose.
PROGRAM = "".join(
    f'def step_{i}(value: int) -> int:\n    """Step {i} of the pipeline."""\n    return value * {i} + {i % 7}\n\n\n'
    for i in range(34)
)
ANSWER = (
    "Here is the pipeline, one small function a step, then the constant you asked for.\n"
    f'<write path="pipeline.py">\n{PROGRAM}</write>\n'
    '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n</new_text>\n</edit>\n'
    "Each step is pure, so you can test them one by one.\n"
)


class DocumentTap:
    """Records the room's document after each update it persisted, and when (ms since the
    Unix epoch, taken as the write returned): the truth a replay must give back."""

    def __init__(self, live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
        room = _room(live)
        assert room is not None
        self.doc: Doc[Any] = Doc()
        self.doc.apply_update(room.doc.get_update())
        self.samples: list[tuple[int, dict[str, str]]] = [(now_ms(), document_texts(self.doc))]
        persist = room.store.append_update

        async def append_update(update: bytes) -> int:
            update_id: int = await persist(update)
            self.doc.apply_update(update)
            self.samples.append((now_ms(), document_texts(self.doc)))
            return update_id

        monkeypatch.setattr(room.store, "append_update", append_update)


def _room(live: Live) -> Room | None:
    """The workspace's room, held by this process."""
    room = ROOMS.held(live.workspace_id)
    return room if isinstance(room, Room) else None


async def _finish(client: LiveClient, live: Live) -> None:
    """Close the socket and the room: every event and update is stored."""
    await client.close()
    room = _room(live)
    if room is not None:
        await room.close()


async def test_each_event_is_stored_with_the_time_it_was_published(
    live: Live, model_server: ModelServer, rooms: None
) -> None:
    assert isinstance(model_server.engine, ScriptedEngine)
    model_server.engine.scripts["pipeline"] = ANSWER  # a prompt as short as a person's
    before = now_ms()
    client = await connect(live)
    await client.send({"type": "prompt", "text": "[rate:2000][script:pipeline] Write the pipeline, please."})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "completed", finished
    await _finish(client, live)
    after = now_ms()

    rows = await database_sync_to_async(lambda: list(RoomEvent.objects.order_by("seq")))()
    assert [row.kind for row in rows][:1] == ["turn.started"] and rows[-1].kind == "turn.finished"
    assert all(row.at is not None and before <= row.at <= after for row in rows)
    runs = [row for row in rows if row.first_seq < row.seq]
    assert runs, "a turn streamed at 2,000 tokens/s is stored as merged runs"
    # A run's span: until its last part (null when that came in the same millisecond).
    assert all(row.until is None or (row.at is not None and row.at < row.until <= after) for row in runs)
    assert any(row.until is not None for row in runs)
    assert all(row.until is None for row in rows if row.first_seq == row.seq)  # a single event: its time
    # Never back in time: ``at`` is the time of the event ``first_seq``, ``until`` that of ``seq``
    # (runs of deltas and of prose interleave, so each is ordered by its own number).
    starts = [row.at for row in sorted(rows, key=lambda row: row.first_seq)]
    ends = [row.until or row.at for row in rows]
    assert starts == sorted(starts, key=lambda at: at or 0) and ends == sorted(ends, key=lambda at: at or 0)

    # What a turn costs in storage, per 1,000 of its tokens (docs/replay.md).
    tokens = finished["metrics"]["tokens"]
    assert tokens == len(split_tokens(ANSWER))
    size = await database_sync_to_async(stored_bytes)(uuid.UUID(live.workspace_id), since=before)
    per_1000 = {kind: round(value * 1000 / tokens) for kind, value in size.items()}
    print(f"\nstored per 1,000 tokens ({tokens} tokens, {len(ANSWER)} characters): {per_1000}")
    assert sum(per_1000.values()) < 16_000, per_1000


async def test_closing_a_room_never_drops_a_write_waiting_for_the_database_thread(
    live: Live, model_server: ModelServer, rooms: None
) -> None:
    """A room closes while its event log's batch waits behind other writes on the database
    thread: the batch is still written (a write cancelled while it waits never runs, so the
    close used to lose the turn's last events: the steer marks of a replay, in CI)."""
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("<write path=\"late.py\">\nlate = 1\n</write>\n")})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    busy = asyncio.create_task(database_sync_to_async(time.sleep)(1.5))  # the thread the rooms write on
    await asyncio.sleep(0.8)  # the log's batch (every 0.5 s) now waits behind it
    await _finish(client, live)
    await busy
    kinds = await database_sync_to_async(
        lambda: list(RoomEvent.objects.filter(turn=finished["turn"]).values_list("kind", flat=True))
    )()
    assert "turn.started" in kinds and "turn.finished" in kinds, kinds


async def test_a_replay_rebuilds_the_document_the_room_had_at_any_moment(
    live: Live, model_server: object, rooms: None, compact_often: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await connect(live)
    tap = DocumentTap(live, monkeypatch)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=800)})
    old = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "edit.status" and e["block"] == 1 and e["state"] == "streaming")
    await client.until_true(lambda: "line_40 = 40" in (client.text("app.py") or ""))
    await client.send({"type": "steer", "text": say(STEERED)})
    new = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != old)
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new["turn"])
    await client.pump(0.2)
    await client.type_text("util.py", 0, "# mine\n")  # a person's typing is history too
    await client.pump(0.2)
    final = {path: client.text(path) for path in ("app.py", "util.py", "steered.py")}
    await _finish(client, live)

    data = await database_sync_to_async(replay_data)(uuid.UUID(live.workspace_id))
    moved = await database_sync_to_async(HistoryUpdate.objects.count)()
    checkpoints = await database_sync_to_async(Checkpoint.objects.count)()
    assert moved >= 6 and checkpoints >= 2, (moved, checkpoints)  # compacted and checkpointed as it went
    assert len(data["updates"]) == len(tap.samples) - 1  # every persisted update, none twice

    # At each moment an update had been written and the next not yet, the replay's document
    # is the room's (moments where the next write began in the same millisecond are ambiguous).
    times = [data["start"] + update[0] for update in data["updates"]] + [None]
    checked = 0
    for (moment, texts), next_write in zip(tap.samples, times, strict=True):
        if next_write is not None and next_write <= moment:
            continue
        assert document_at(data, moment) == texts
        checked += 1
    assert checked >= len(tap.samples) * 0.6, (checked, len(tap.samples))
    end = document_at(data, data["start"] + data["end"])
    assert {path: end.get(path) for path in final} == final
    assert final["app.py"] is not None and "line_" not in final["app.py"]  # the steer rolled the block back
    assert final["util.py"] == "# mine\nX = 2\n"

    # The steer is marked where the steered turn ended, with the steering text.
    steer = [mark for mark in data["marks"] if mark["kind"] == "steer"]
    assert len(steer) == 1 and steer[0]["turn"] == old and STEERED.strip() in steer[0]["text"]
    finished_old = next(e for e in data["events"] if e["type"] == "turn.finished" and e["turn"] == old)
    assert steer[0]["t"] == finished_old["t"]
    assert [mark["kind"] for mark in data["marks"]] == ["turn", "steer"]


async def test_a_replay_opened_right_after_a_turn_holds_all_of_it(
    live: Live, model_server: ModelServer, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room writes its turn events in batches, after sending them; a replay asked for
    right after a turn has the room store what it holds first, and shows the whole turn
    (it used to miss a watchdog's halt opened within the batch's half second, in CI)."""
    from django.test import AsyncClient

    from spark_ide.pairing import adapter

    settings = adapter.live_settings
    monkeypatch.setattr(adapter, "live_settings", lambda: dataclasses.replace(settings(), log_batch_s=600.0))
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("All of it.\n")})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    stored = await database_sync_to_async(lambda: RoomEvent.objects.filter(turn=finished["turn"]).count())()
    assert stored == 0  # nothing written yet: the next batch is ten minutes away

    browser = AsyncClient()
    await browser.aforce_login(live.owner)
    response = await browser.get(f"/sessions/{live.session_id}/replay/data")
    assert response.status_code == 200
    events = [event for event in response.json()["events"] if event.get("turn") == finished["turn"]]
    assert [event["type"] for event in events][:1] == ["turn.started"]
    assert events[-1]["type"] == "turn.finished" and events[-1]["status"] == "completed"
    await _finish(client, live)
