"""The workspace is the room: every session of it shares one document, one turn history,
one ordered event stream; reconnects replay before live; failures are loud and recoverable."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import weakref
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import OperationalError
from pycrdt import Doc, Map, Text, create_update_message

from spark_ide.editing import workspace_files
from spark_ide.editing.document import document_texts
from spark_ide.live.store import LiveSettings
from spark_ide.pairing import adapter
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Session, Turn
from spark_ide.pairing.services import session_create
from spark_ide.workspaces import documents
from tests.pairing.conftest import FILES, Live, LiveClient, connect, say, token_for
from tests.pairing.test_steer_stop import FIRST_BLOCK, STEERED

pytestmark = [pytest.mark.django_db(transaction=True)]

LONG_WRITE = '<write path="long.py">\n' + "".join(f"x{i} = {i}\n" for i in range(1500)) + "</write>\n"


async def second_session(live: Live) -> str:
    """Another session of the same workspace (an older link, a second "start")."""
    session: Session = await database_sync_to_async(session_create)(
        workspace=await database_sync_to_async(lambda: Session.objects.get(pk=live.session_id).workspace)(),
        by=live.owner,
    )
    return str(session.id)


def turn_text(client: LiveClient, turn: str) -> str:
    return "".join(e["text"] for e in client.of("turn.delta", turn))


async def test_two_sessions_of_a_workspace_share_one_document_and_one_stream(live: Live, rooms: None) -> None:
    other = await second_session(live)
    a = await connect(live)
    b = await connect(live, path=f"/ws/sessions/{other}/")
    await a.pump(0.2)
    await b.pump(0.2)
    await a.type_text("util.py", 0, "# typed in A\n")
    await b.until_true(lambda: b.text("util.py") == "# typed in A\nX = 1\n")
    await b.type_text("app.py", 0, "# typed in B\n")
    await a.until_true(lambda: a.text("app.py") == "# typed in B\n" + FILES["app.py"])
    assert ROOMS.owned(live.workspace_id) is not None
    await a.close()
    await b.close()


async def test_a_turn_driven_in_one_session_streams_to_the_other(
    live: Live, model_server: object, rooms: None
) -> None:
    other = await second_session(live)
    a = await connect(live)
    b = await connect(live, path=f"/ws/sessions/{other}/")
    await b.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED)})
    started = await a.until(lambda e: e["type"] == "turn.started")
    assert started["author"] == "ada"
    finished = await a.until(lambda e: e["type"] == "turn.finished")
    await b.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "completed"
    assert finished["reason"] == "answered"
    await a.pump(0.3)
    await b.pump(0.3)
    assert a.text("util.py") == b.text("util.py") == "X = 2\n"
    assert turn_text(a, started["turn"]) == turn_text(b, started["turn"]) == FIRST_BLOCK + STEERED
    # The turn is the room's: both sessions' histories list it.
    for session in (live.session_id, other):
        response = await database_sync_to_async(_turns_api)(live, session)
        assert [t["id"] for t in response] == [started["turn"]]
    await a.close()
    await b.close()


def _turns_api(live: Live, session: str) -> list[dict[str, Any]]:
    from django.test import Client

    http = Client()
    http.defaults["HTTP_AUTHORIZATION"] = f"Token {live.owner_token}"
    body: list[dict[str, Any]] = http.get(f"/api/sessions/{session}/turns").json()
    return body


# Events sent with the room's current seq, not kept in its log (``Event.ephemeral``).
UNLOGGED = {"hello", "presence", "model", "pong", "error", "resync"}


async def test_a_reconnect_with_after_gets_what_it_missed_before_the_live_stream(
    live: Live, model_server: object, rooms: None
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED, rate=300)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta")
    held = max(e["seq"] for e in client.events if e["type"] != "hello")
    await client.close()  # dropped mid-turn
    back = await connect(live, path=f"/ws/sessions/{live.session_id}/?after={held}")
    await back.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=15)
    seqs = [e["seq"] for e in back.events if e["type"] not in UNLOGGED]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))  # in order, nothing twice
    assert min(seqs) > held
    # What it had plus what it got is exactly what the model wrote: no gap, no repeat.
    assert turn_text(client, turn) + turn_text(back, turn) == FIRST_BLOCK + STEERED
    assert not back.of("resync")
    await back.close()


async def test_pages_reconnecting_together_each_get_what_they_missed_and_presence_is_not_a_frame_per_join(
    live: Live, model_server: object, rooms: None
) -> None:
    """A server restart brings every page of a room back at once, each with the same last seq:
    each must get exactly what it missed (merged once for all of them), and each join must not
    announce presence to everyone (16 joins gave 16 x 16 frames)."""
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED, rate=300)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta")
    held = max(e["seq"] for e in client.events if e["type"] != "hello")
    await client.close()
    await asyncio.sleep(0.2)  # the turn goes on while the pages are away
    url = f"/ws/sessions/{live.session_id}/?after={held}"
    backs = await asyncio.gather(*(connect(live, path=url) for _ in range(16)))
    for back in backs:
        await back.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=20)
        assert turn_text(client, turn) + turn_text(back, turn) == FIRST_BLOCK + STEERED
        seqs = [e["seq"] for e in back.events if e["type"] not in UNLOGGED]
        assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and min(seqs) > held
    first = backs[0]
    final = await first.until(lambda e: e["type"] == "presence" and e["participants"][0]["connections"] == 16)
    assert len(final["participants"]) == 1
    assert len(first.of("presence")) <= 8  # at most one every 0.1 s while they came
    for back in backs:
        await back.close()


async def test_a_client_too_far_behind_is_resynced_and_converges(
    live: Live, model_server: object, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = adapter.live_settings

    def small_replay() -> LiveSettings:
        return dataclasses.replace(settings(), replay_limit=5)

    monkeypatch.setattr(adapter, "live_settings", small_replay)
    client = await connect(live)
    await client.pump(0.2)
    held = client.events[0]["seq"]
    await client.close()
    writer = await connect(live)
    await writer.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED, rate=1000)})
    turn = (await writer.until(lambda e: e["type"] == "turn.finished"))["turn"]
    back = await connect(live, path=f"/ws/sessions/{live.session_id}/?after={held}")
    resync = await back.until(lambda e: e["type"] == "resync")
    assert resync["reason"]
    await back.pump(0.3)
    assert back.text("util.py") == "X = 2\n"  # the document came whole with the join
    # The transcript came again: the finished turn's prose and statuses, not its raw deltas.
    assert back.of("turn.started", turn) and back.of("turn.finished", turn)
    assert [e["state"] for e in back.of("edit.status", turn) if e["state"] == "applied"] == ["applied", "applied"]
    assert not back.of("turn.delta", turn)
    await writer.close()
    await back.close()


async def test_a_new_page_gets_the_recent_transcript(live: Live, model_server: object, rooms: None) -> None:
    first = await connect(live)
    await first.send({"type": "prompt", "text": say("Here you go.\n" + STEERED)})
    turn = (await first.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await first.close()
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # a restart: the transcript now comes from the stored event log
    page = await connect(live)
    await page.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert "".join(e["text"] for e in page.of("turn.prose", turn)) == "Here you go.\n"
    assert page.of("turn.started", turn)[0]["prompt"] == say("Here you go.\n" + STEERED)
    hello = page.of("hello")[0]
    assert hello["epoch"] == 2
    assert hello["seq"] > max(e["seq"] for e in page.of("turn.finished"))
    await page.close()


async def test_a_new_page_gets_each_fences_code_as_the_model_wrote_it_not_as_the_file_is_now(
    live: Live, model_server: object, rooms: None, settings: Any,
) -> None:
    """A reloaded page shows a fence from its final status (``detail.code``): text a person
    typed into the file afterwards is not the model's."""
    settings.SPARK_EDIT_STYLE = "whole-file"  # a small model: the first fence writes the active file
    code = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
    first = await connect(live)
    await first.send({"type": "prompt", "text": say(f"Here:\n```python\n{code}```\nDone.\n"), "path": "main.py"})
    turn = (await first.until(lambda e: e["type"] == "turn.finished"))["turn"]
    applied = first.of("edit.status", turn)[-1]
    assert applied["state"] == "applied" and applied["detail"]["code"] == code
    await first.until_true(lambda: first.text("main.py") == code)
    await first.type_text("main.py", 0, "# Grace was here\n")
    await first.close()
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # a restart: the transcript now comes from the stored event log
    page = await connect(live)
    await page.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    await page.until_true(lambda: page.text("main.py") == "# Grace was here\n" + code)
    final = page.of("edit.status", turn)[-1]
    assert (final["state"], final["detail"]["code"], final["detail"]["fenced"]) == ("applied", code, True)
    await page.close()


async def test_revert_of_the_running_turn_stops_upstream_and_the_next_prompt_starts_at_once(
    live: Live, model_server: Any, rooms: None
) -> None:
    from tests.support.recording_engine import recording_engine

    engine = recording_engine(model_server)
    long_answer = say(LONG_WRITE, rate=200)
    client = await connect(live)
    await client.send({"type": "prompt", "text": long_answer})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "edit.status" and e["state"] == "streaming")
    await client.send({"type": "prompt", "text": say(STEERED)})  # queued behind it
    await client.until(lambda e: e["type"] == "turn.queued")
    await client.send({"type": "revert", "turn": turn})
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert (finished["status"], finished["reason"]) == ("cancelled", "reverted")
    nxt = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != turn)
    # Not behind the abandoned answer: played out, its 6,410 tokens at 200/s would take 32 s.
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == nxt["turn"], timeout=15)
    assert done["status"] == "completed"
    # Upstream's own record: the abandoned generation was stopped, well short of its end.
    (abandoned,) = [g for g in engine.generations if "x1499 = 1499" in g.prompt]
    assert abandoned.end == "stopped"
    assert abandoned.tokens < 1500
    await client.pump(0.3)
    assert client.text("long.py") is None  # the revert took the half-written file away
    assert client.text("steered.py") == "steered = True\n"
    await client.close()


def failing(times: int, real: Any) -> Any:
    """``real``, except that its first ``times`` calls raise what a locked SQLite raises."""
    calls = {"n": 0}

    def append(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= times:
            raise OperationalError("database is locked")
        return real(*args, **kwargs)

    return append


async def test_a_write_that_fails_once_is_retried_and_nobody_notices(
    live: Live, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await connect(live)
    b = await connect(live)
    await a.pump(0.2)
    monkeypatch.setattr(documents, "document_append_many", failing(1, documents.document_append_many))
    await a.type_text("util.py", 0, "# kept\n")
    await b.until_true(lambda: b.text("util.py") == "# kept\nX = 1\n")
    assert not a.of("error") and not b.of("error")
    await a.close()
    await b.close()


@pytest.mark.services  # the document stored once storage is back
async def test_a_write_that_keeps_failing_is_reported_the_model_stopped_and_nothing_lost(
    live: Live, model_server: object, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await connect(live)
    b = await connect(live)
    await a.send({"type": "prompt", "text": say(FIRST_BLOCK + LONG_WRITE, rate=300)})
    turn = (await a.until(lambda e: e["type"] == "turn.started"))["turn"]
    await a.until(lambda e: e["type"] == "edit.status" and e["state"] == "applied")
    # Every try of the next write fails (1 + 3 retries); the one after that works.
    monkeypatch.setattr(documents, "document_append_many", failing(4, documents.document_append_many))
    await a.type_text("app.py", 0, "# mine\n")
    error = await b.until(lambda e: e["type"] == "error", timeout=10)
    assert error["code"] == "storage_failed"
    assert "saved" in error["message"]
    finished = await b.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert (finished["status"], finished["reason"]) == ("failed", "storage_failed")
    await b.until(lambda e: e["type"] == "resync", timeout=10)  # storage is back: start over
    await b.until_true(lambda: (b.text("app.py") or "").startswith("# mine\n"))
    assert b.text("app.py") == "# mine\n" + FILES["app.py"]
    stored = await database_sync_to_async(documents.document_load)(live.workspace_id)
    assert str(stored.get("files", type=Map)["app.py"]).startswith("# mine\n")  # saved, not just shown
    await a.close()
    await b.close()


async def test_a_collaborators_new_file_past_the_limit_with_a_bad_path_or_under_a_file_is_refused(
    live: Live, rooms: None, settings: Any
) -> None:
    settings.SPARK_MAX_WORKSPACE_FILES = 3  # app.py and util.py exist: room for one more
    client = await connect(live)
    await client.pump(0.2)
    files = client.doc.get("files", type=Map)
    refused = (("two.py", "too_many_files"), ("a/../b.py", "bad_path"), ("app.py/x.py", "path_conflict"))
    for path, expected in (("one.py", None), *refused):
        before = client.doc.get_state()
        with client.doc.transaction():
            files[path] = Text("x = 1\n")
        await client.comm.send_to(bytes_data=create_update_message(client.doc.get_update(before)))
        await client.pump(0.3)
        errors = [e for e in client.of("error") if e.get("ref") == path or path in e.get("message", "")]
        if expected is None:
            assert not errors
        else:
            assert errors and errors[0]["code"] == expected
            await client.until_true(lambda refused=path: client.text(refused) is None)  # removed for everyone
    fresh = await connect(live)
    await fresh.pump(0.3)
    assert sorted(fresh.doc.get("files", type=Map).keys()) == ["app.py", "one.py", "util.py"]
    await client.close()
    await fresh.close()


@pytest.mark.services  # the turn's row, read and closed
async def test_a_turn_running_when_the_server_stopped_is_closed_for_every_transcript(
    live: Live, rooms: None
) -> None:
    from spark_ide.live.store import TurnRecord
    from spark_ide.pairing.services import turn_create

    record = TurnRecord(turn="lost0000turn", session=live.session_id, author_id=None, prompt="p",
                        effort="medium", active_path="", steered_from=None)
    await database_sync_to_async(turn_create)(record)
    client = await connect(live)
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == "lost0000turn")
    assert (finished["status"], finished["reason"]) == ("failed", "owner_lost")
    row = await database_sync_to_async(Turn.objects.get)(pk="lost0000turn")
    assert (row.status, row.reason) == ("failed", "owner_lost")
    await client.close()



async def test_a_participant_removed_from_the_workspace_is_hung_up_on(live: Live, rooms: None) -> None:
    from spark_ide.pairing.models import Participant, Role

    mate = await database_sync_to_async(live.owner.__class__.objects.create_user)(username="cole", password="pw-c-123")
    await database_sync_to_async(Participant.objects.create)(session_id=live.session_id, user=mate,
                                                              role=Role.COLLABORATOR)
    owner = await connect(live)
    guest = await connect(live, token=await token_for(mate))
    await owner.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    seen = len(owner.events)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    room.expel(mate.pk)
    error = await guest.until(lambda e: e["type"] == "error")
    assert (error["code"], error["message"]) == ("forbidden", "you were removed from this workspace")
    with pytest.raises(ConnectionError):
        await guest.until(lambda e: False, timeout=2)
    await owner.until_true(lambda: any(e["type"] == "presence" for e in owner.events[seen:]))
    later = [e for e in owner.events[seen:] if e["type"] == "presence"]
    assert [(p["user"], p["role"]) for p in later[-1]["participants"]] == [("ada", "owner")]
    await owner.close()


async def test_a_page_joining_while_events_wait_behind_a_save_gets_each_once(
    live: Live, model_server: object, rooms: None
) -> None:
    """Events that tell of the document (the block's end, the turn's) wait in the pipeline
    while the update before them is being saved, and so does everything after them; a page
    that joins then is sent the events up to what was sent, and the rest once, live."""
    writer = await connect(live)
    # The block's end waits for the save; the prose after it waits behind it, and the turn
    # is still running when the page joins.
    write = '<write path="long.py">\n' + "".join(f"x{i} = {i}\n" for i in range(600)) + "</write>\n"
    answer = "Writing it.\n" + write + "After it: " + "and more words " * 800
    await writer.send({"type": "prompt", "text": say(answer, rate=1500)})
    started = await writer.until(lambda e: e["type"] == "edit.status")
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    saving = room.store.append_update
    release = asyncio.Event()

    async def slow_save(update: bytes) -> int:
        await release.wait()  # the pipeline holds what was published meanwhile
        return await saving(update)

    room.store.append_update = slow_save  # type: ignore[method-assign]
    # The model's text goes on meanwhile (it does not wait for the document); the block's
    # final status waits for the save, and what comes after it waits behind it.
    for _ in range(1000):
        if room.seq > room.pipeline.sent_seq:
            break
        await asyncio.sleep(0.01)
    assert room.seq > room.pipeline.sent_seq, "nothing waited in the pipeline"
    assert room.running_turn is not None
    page = await connect(live)
    assert page.events[0]["seq"] == room.pipeline.sent_seq  # hello: the cut
    room.store.append_update = saving  # type: ignore[method-assign]
    release.set()
    for client in (writer, page):
        await client.until(lambda e: e["type"] == "turn.finished", timeout=20)
    turn = started["turn"]
    assert turn_text(page, turn) == turn_text(writer, turn)
    seqs = [e["seq"] for e in page.events if e["type"] == "turn.delta"]
    assert seqs == sorted(set(seqs))
    await writer.close()
    await page.close()


async def _replaced(room: Any, generation: int) -> None:
    """Wait (without taking in what the pages were sent) until the room holds ``generation``."""
    for _ in range(500):
        if room.generation == generation:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the room never reached generation {generation}")


async def test_a_replaced_document_is_adopted_by_pages_and_its_earlier_turns_still_revert(
    live: Live, model_server: object, rooms: None
) -> None:
    """Turns that rewrite a file leave deleted items in the document, which no copy of it
    drops: the room replaces it by a new one built from the text (new item ids). Pages adopt
    it (``document.replaced``) and go on syncing, a page that joins gets the small one, what is
    stored is the new one (a restart loads it), and a turn from before reverts (as text)."""
    def body(k: int) -> str:
        return "".join(f"VALUE_{k}_{i} = {i * k}\n" for i in range(80))

    client = await connect(live)
    turns = []
    for k in range(1, 5):
        await client.send({"type": "prompt", "text": say(f'<write path="big.py">\n{body(k)}</write>\n')})
        turns.append((await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] not in turns))["turn"])
    room = ROOMS.owned(live.workspace_id)
    assert room is not None and room.generation == 0
    await client.type_text("util.py", 0, "# typed before\n")
    await client.until_true(lambda: str(workspace_files(room.doc)["util.py"]).startswith("# typed before"))
    before = len(room.doc.get_update())
    old = weakref.ref(room.doc)
    room.replace_document()
    replaced = await client.until(lambda e: e["type"] == "document.replaced")
    assert replaced["generation"] == room.generation == 1
    assert len(room.doc.get_update()) * 3 < before  # the deleted items are gone
    assert client.text("big.py") == body(4) and (client.text("util.py") or "").startswith("# typed before")
    room.replacements.let_go()  # kept a while for pages that still send of it; then nothing holds it
    gc.collect()
    assert old() is None
    await client.type_text("util.py", 0, "# typed after the replacement\n")
    await client.until_true(lambda: str(workspace_files(room.doc)["util.py"]).startswith("# typed after"))
    assert "# typed before" in str(workspace_files(room.doc)["util.py"])
    fresh = await connect(live)
    await fresh.until_true(lambda: fresh.text("big.py") == body(4))
    assert fresh.of("hello")[0]["generation"] == 1 and not fresh.of("document.replaced")
    assert fresh.text("util.py") == client.text("util.py")
    stored = await database_sync_to_async(documents.document_load)(live.workspace_id)
    assert document_texts(stored) == room.texts()
    await client.send({"type": "revert", "turn": turns[-1]})
    await client.until(lambda e: e["type"] == "turn.reverted" and e["turn"] == turns[-1])
    for page in (client, fresh):
        await page.until_true(lambda page=page: page.text("big.py") == body(3))
    assert fresh.text("util.py") == client.text("util.py")
    assert (client.text("util.py") or "").startswith("# typed after")
    await client.close()
    await fresh.close()


async def test_what_a_page_typed_into_the_replaced_document_is_merged_into_the_new_one(
    live: Live, rooms: None
) -> None:
    """Keystrokes in flight when the document is replaced, and keystrokes made offline by a
    page that comes back holding the old document, are carried into the new one as text;
    where they clash with a change made since, the page's version goes beside the file."""
    typist = await connect(live)
    offline = await connect(live)
    offline.answers = True
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await typist.pump(0.1)
    await offline.pump(0.1)
    await offline.close()
    with offline.doc.transaction():  # typed while the page had no socket: nothing was sent
        offline.doc.get("files", type=Map)["app.py"].insert(0, "# offline\n")
    room.replace_document()
    await _replaced(room, 1)
    await typist.type_text("util.py", 0, "# in flight\n")  # of the old document: the page has not heard yet
    await typist.until(lambda e: e["type"] == "document.replaced")
    await typist.until_true(lambda: typist.text("util.py") == "# in flight\nX = 1\n")
    assert room.texts()["util.py"] == "# in flight\nX = 1\n"  # once, from the merge

    # The offline page comes back with the old document: asked what it has of it, then given the new one.
    path = f"/ws/sessions/{live.session_id}/?generation=0"
    back = await connect(live, path=path, doc=offline.doc, answers=True)
    await back.until(lambda e: e["type"] == "document.replaced")
    await back.until_true(lambda: back.text("app.py") == "# offline\n" + FILES["app.py"])
    await typist.until_true(lambda: typist.text("app.py") == "# offline\n" + FILES["app.py"])

    # A clash: the old document's util.py and the new one's changed the same line.
    room.files.set_file("util.py", "X = 2\n")
    assert room.replacements.previous is not None
    held: Doc[Any] = Doc()
    held.apply_update(room.replacements.previous[1].get_update())  # as it held the old document
    stale = await connect(live, path=path, doc=held, answers=True, adopts=False)
    await stale.type_text("util.py", 0, "# mine\n")
    await typist.until_true(lambda: typist.text("util.mine.py") is not None)
    assert typist.text("util.py") == "X = 2\n"

    # A page two replacements behind cannot be merged: it is told so, nothing changes.
    room.replace_document()
    await _replaced(room, 2)
    await stale.type_text("util.py", 0, "# lost\n")
    error = await stale.until(lambda e: e["type"] == "error" and e["code"] == "document_replaced")
    assert "could not be merged" in error["message"]
    await typist.pump(0.2)
    assert "# lost" not in room.texts()["util.py"]

    # Past MERGE_MAX_CHARS a file is not merged line by line (on the room's loop): beside it.
    big = "".join(f"line {i}\n" for i in range(10_000))
    room.files.set_file("big.txt", big + "theirs\n")
    assert room.replacements.merge_texts({"big.txt": big}, {"big.txt": "mine\n" + big}) is None
    await typist.until_true(lambda: typist.text("big.mine.txt") == "mine\n" + big)
    assert room.texts()["big.txt"] == big + "theirs\n"
    for page in (typist, back, stale):
        await page.close()


async def test_a_replacement_that_cannot_be_saved_leaves_the_room_its_document(live: Live, rooms: None) -> None:
    """The new document is saved before anyone hears of it: when storage refuses, the room
    keeps its own (pages are told nothing, typing goes on); the next replacement goes through."""
    client = await connect(live)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    tries: list[int] = []

    async def refuse(state: bytes, *, generation: int, previous: bytes | None) -> None:
        tries.append(generation)
        raise OperationalError("the database went away")

    room.store.replace_document = refuse  # type: ignore[method-assign]
    kept = room.doc
    room.replace_document()
    await client.type_text("util.py", 0, "# typed meanwhile\n")
    for _ in range(100):
        if len(tries) == 4:  # the first try and its three retries
            break
        await client.pump(0.05)
    await client.pump(0.2)
    assert room.doc is kept and room.generation == 0 and not client.of("document.replaced")
    assert room.texts()["util.py"] == client.text("util.py") == "# typed meanwhile\nX = 1\n"
    del room.store.replace_document  # storage answers again
    room.replace_document()
    await client.until(lambda e: e["type"] == "document.replaced" and e["generation"] == 1)
    await client.type_text("util.py", 0, "# after\n")
    await client.until_true(lambda: room.texts()["util.py"] == "# after\n# typed meanwhile\nX = 1\n")
    await client.close()


@pytest.mark.services  # the replacement document, stored
async def test_the_room_compacts_its_document_on_its_own_between_turns(
    live: Live, model_server: object, rooms: None, settings: Any
) -> None:
    settings.SPARK_REPLACE_CHECK_TURNS, settings.SPARK_REPLACE_RATIO, settings.SPARK_REPLACE_SLACK_BYTES = 2, 1, 0
    client = await connect(live)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    first_doc = room.doc
    seen: list[str] = []
    for k in range(1, 4):
        text = "".join(f"V{k}_{i} = {i}\n" for i in range(80))
        await client.send({"type": "prompt", "text": say(f'<write path="big.py">\n{text}</write>\n')})
        seen.append((await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] not in seen))["turn"])
    await client.until_true(lambda: room.doc is not first_doc and room.generation == 1)
    assert len(room.doc.get_update()) < 4 * sum(len(t) for t in room.texts().values())
    await client.close()
