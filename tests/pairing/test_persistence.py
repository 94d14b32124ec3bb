"""The live document is persisted: a restart loses no edit, and HTTP sees the live text."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from channels.db import database_sync_to_async
from django.db import IntegrityError, connections
from django.test import Client

from spark_ide.live.events import TurnDelta
from spark_ide.live.store import StoredEvent
from spark_ide.pairing.adapter import ROOMS, DatabaseRoomStore, StaleOwner, appends
from spark_ide.pairing.models import Turn
from spark_ide.workspaces.documents import files_materialize
from spark_ide.workspaces.models import DocumentUpdate, File, Workspace
from spark_ide.workspaces.services import WorkspaceError, file_delete, file_rename, file_write, workspace_create
from tests.pairing.conftest import Live, connect, say
from tests.pairing.test_steer_stop import FIRST_BLOCK, STEERED

# The services pass runs it again: the live document and the file rows, stored.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


async def _file_text(workspace_id: str, path: str) -> str | None:
    row = await database_sync_to_async(File.objects.filter(workspace_id=workspace_id, path=path).first)()
    return None if row is None else row.text


async def _eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_edits_survive_a_restart_and_reach_the_file_rows(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED)})
    await client.until(lambda e: e["type"] == "turn.finished")
    await client.pump(0.2)
    await client.type_text("util.py", 0, "# typed\n")
    await client.pump(0.3)
    await client.close()
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # what a server shutdown does

    async def rows_done() -> bool:
        return await _file_text(live.workspace_id, "util.py") == "# typed\nX = 2\n"

    await _eventually(rows_done)
    assert await _file_text(live.workspace_id, "steered.py") == "steered = True\n"
    reopened = await connect(live)  # a new hub, loaded from the database
    await reopened.pump(0.3)
    assert reopened.text("util.py") == "# typed\nX = 2\n"
    assert reopened.text("steered.py") == "steered = True\n"
    turn = await database_sync_to_async(Turn.objects.get)()
    assert turn.status == "completed"
    assert "+X = 2" in turn.diff["util.py"]
    assert [entry["outcome"] for entry in turn.ledger] == ["applied", "applied"]
    await reopened.close()


async def test_an_http_write_reaches_the_live_document(live: Live, rooms: None) -> None:
    client = await connect(live)
    await client.pump(0.2)
    workspace = await database_sync_to_async(Workspace.objects.get)(pk=live.workspace_id)
    await database_sync_to_async(file_write)(workspace=workspace, path="util.py", data=b"X = 99\n")
    await database_sync_to_async(file_write)(workspace=workspace, path="fresh.py", data=b"new = 1\n")

    async def seen() -> bool:
        await client.pump(0.05)
        return client.text("util.py") == "X = 99\n" and client.text("fresh.py") == "new = 1\n"

    await _eventually(seen)
    await client.close()


async def test_a_rename_right_after_a_keystroke_moves_the_live_text_in_one_change(live: Live, rooms: None) -> None:
    """The ``File`` row lags the live document (it is materialised later): a rename takes the
    text the document holds, keystroke included, and pages see the file go and come in one
    update. A rename whose file is gone from the live document is refused, changing nothing."""
    client = await connect(live)
    await client.pump(0.2)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await client.type_text("util.py", 0, "# typed\n")
    await client.until_true(lambda: room.texts()["util.py"] == "# typed\nX = 1\n")
    workspace = await database_sync_to_async(Workspace.objects.get)(pk=live.workspace_id)
    updates: list[bytes] = []
    watch = room.doc.observe(lambda event: updates.append(bytes(event.update)))
    renamed = await database_sync_to_async(file_rename)(workspace=workspace, path="util.py", new_path="lib/util.py")
    room.doc.unobserve(watch)
    assert renamed.text == "# typed\nX = 1\n" and len(updates) == 1
    row = await database_sync_to_async(File.objects.get)(workspace_id=live.workspace_id, path="lib/util.py")
    assert (row.text, row.size) == ("# typed\nX = 1\n", 14)
    await client.until_true(lambda: client.text("lib/util.py") == "# typed\nX = 1\n" and client.text("util.py") is None)

    # app.py is deleted live but its row is still there (not materialised yet): refused.
    room.files.set_file("app.py", None)
    with pytest.raises(WorkspaceError) as refused:
        await database_sync_to_async(file_rename)(workspace=workspace, path="app.py", new_path="main.py")
    assert refused.value.code == "changed"
    # Nothing was renamed (app.py's row itself goes when the rows next follow the document,
    # 0.2 s after the change: on a loaded machine that may be before this looks).
    renamed_rows = File.objects.filter(workspace_id=live.workspace_id, path="main.py")
    assert not await database_sync_to_async(renamed_rows.exists)()
    assert "main.py" not in room.texts()
    await client.close()


async def test_a_file_the_live_document_has_before_its_row_is_renamed_and_deleted(live: Live, rooms: None) -> None:
    """The rows follow the live document a moment later (a refresh that began before a rename
    may even write after it, for a moment taking the new name's row away). A rename or a
    delete in that moment is of the file the document holds, not "no file" (a browser test
    renamed right after typing and got that, now and then, on a loaded machine)."""
    client = await connect(live)
    await client.pump(0.2)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    workspace = await database_sync_to_async(Workspace.objects.get)(pk=live.workspace_id)
    room.files.set_file("written.py", "by the model\n")
    assert await _file_text(live.workspace_id, "written.py") is None  # its row is not there yet
    renamed = await database_sync_to_async(file_rename)(workspace=workspace, path="written.py", new_path="kept.py")
    assert (renamed.path, renamed.text) == ("kept.py", "by the model\n")
    assert await _file_text(live.workspace_id, "kept.py") == "by the model\n"
    assert await _file_text(live.workspace_id, "written.py") is None
    await client.until_true(lambda: client.text("kept.py") == "by the model\n" and client.text("written.py") is None)

    room.files.set_file("scratch.py", "tmp = 1\n")
    await database_sync_to_async(file_delete)(workspace=workspace, path="scratch.py")
    assert "scratch.py" not in room.texts()
    assert await _file_text(live.workspace_id, "scratch.py") is None
    # A file neither the rows nor the document has is still no file.
    with pytest.raises(WorkspaceError) as missing:
        await database_sync_to_async(file_delete)(workspace=workspace, path="nowhere.py")
    assert missing.value.code == "not_found"
    await client.close()


async def test_a_rows_refresh_that_read_the_texts_before_an_http_rename_keeps_nothing(live: Live, rooms: None) -> None:
    """The room's refresh of the rows read the document's texts, then an HTTP rename wrote its
    rows and moved the file: the refresh, written after, keeps nothing (it would have put the
    old name's row back and taken the new one's away until the next refresh)."""
    client = await connect(live)
    await client.pump(0.2)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    workspace = await database_sync_to_async(Workspace.objects.get)(pk=live.workspace_id)
    read_before = dict(room.texts())
    begun, done = room.files.http_changes()
    assert begun == done  # none on its way: a refresh may read the texts now
    await database_sync_to_async(file_rename)(workspace=workspace, path="util.py", new_path="lib/util.py")
    assert room.files.http_changes()[0] > begun
    kept = await database_sync_to_async(files_materialize)(
        live.workspace_id, read_before, lambda: room.files.http_changes()[0] == begun,
    )
    assert kept is False
    assert await _file_text(live.workspace_id, "util.py") is None
    assert await _file_text(live.workspace_id, "lib/util.py") == read_before["util.py"]
    # Read after the rename, a refresh is kept.
    now = room.files.http_changes()[0]
    kept = await database_sync_to_async(files_materialize)(
        live.workspace_id, dict(room.texts()), lambda: room.files.http_changes()[0] == now,
    )
    assert kept is True
    await client.close()


async def test_a_file_created_from_the_tree_never_empties_one_the_live_document_has(live: Live, rooms: None) -> None:
    """The model wrote a file a moment ago: the live document has it, its row does not yet
    (materialised later). Created from the tree meanwhile under the same path, it is refused
    as existing, where it used to be written over with an empty text."""
    client = await connect(live)
    await client.pump(0.2)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    room.files.set_file("written.py", "by the model\n")
    assert await _file_text(live.workspace_id, "written.py") is None
    http = Client()
    await database_sync_to_async(http.force_login)(live.owner)
    answer = await database_sync_to_async(http.post)(
        f"/sessions/{live.session_id}/tree", {"action": "create", "path": "written.py"}, HTTP_HX_REQUEST="true",
    )
    assert "written.py already exists" in answer.content.decode()
    assert "HX-Trigger-After-Swap" not in answer  # no tab opens on an empty file
    await client.pump(0.1)
    assert room.texts()["written.py"] == client.text("written.py") == "by the model\n"
    await client.close()


async def test_the_http_api_reads_the_text_the_session_wrote(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(STEERED)})
    await client.until(lambda e: e["type"] == "turn.finished")
    http = Client()
    http.defaults["HTTP_AUTHORIZATION"] = f"Token {live.owner_token}"
    # Read at once, not eventually: a live document answers for itself.
    response = await database_sync_to_async(http.get)(f"/api/workspaces/{live.workspace_id}/files/steered.py")
    assert (response.status_code, response.content) == (200, b"steered = True\n")
    await client.type_text("util.py", 0, "# now\n")
    await client.pump(0.05)
    response = await database_sync_to_async(http.get)(f"/api/workspaces/{live.workspace_id}/files/util.py")
    assert response.content == b"# now\nX = 1\n"
    missing = await database_sync_to_async(http.get)(f"/api/workspaces/{live.workspace_id}/files/nope.py")
    assert missing.status_code == 404
    await client.close()


async def test_the_tree_and_the_listing_show_a_file_the_model_just_made(
    live: Live, model_server: object, rooms: None
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(STEERED)})
    await client.until(lambda e: e["type"] == "turn.finished")
    http = Client()
    http.defaults["HTTP_AUTHORIZATION"] = f"Token {live.owner_token}"
    listing = await database_sync_to_async(http.get)(f"/api/workspaces/{live.workspace_id}")
    assert {"path": "steered.py", "size": 15, "language": "Python"} in listing.json()["files"]
    await database_sync_to_async(http.force_login)(live.owner)
    tree = await database_sync_to_async(http.get)(f"/sessions/{live.session_id}/tree")
    assert 'data-open="steered.py"' in tree.content.decode()
    await client.close()


async def test_the_updates_of_many_rooms_are_written_together_each_room_in_order(
    transactional_db: None, django_user_model: Any,
) -> None:
    """Updates waiting at once, of several rooms, take one trip to the database thread; each
    room gets its own rows, in its order; a room opened again elsewhere (a stale epoch) has
    its write refused alone, and the others' writes of that trip stand."""
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="grace")

    async def opened(name: str) -> DatabaseRoomStore:
        workspace = await database_sync_to_async(workspace_create)(owner=owner, name=name, files={"a.py": ""})
        store = DatabaseRoomStore(workspace.id)
        await database_sync_to_async(store._open)()
        return store

    stores = [await opened(f"w{i}") for i in range(4)]
    stale = stores[3]
    stale.epoch -= 1  # another process opened it since
    writer = appends()
    trips = writer.trips
    results = await asyncio.gather(
        *(store.append_update(f"{i}".encode()) for i, store in enumerate(stores)),
        *(store.append_events([_event(i)]) for i, store in enumerate(stores)),  # the event log's rows too
        return_exceptions=True,
    )
    assert writer.trips == trips + 1
    assert isinstance(results[3], StaleOwner) and isinstance(results[7], StaleOwner)
    assert all(isinstance(result, int) for result in results[:3])
    assert results[4:7] == [None, None, None]
    for i, store in enumerate(stores):
        logged = await store.events_after(0, limit=10)
        assert [(entry.seq, entry.event) for entry in logged] == ([] if store is stale else [(i + 1, _event(i).event)])
    second = await asyncio.gather(*(store.append_update(b"second") for store in stores[:3]))
    for i, store in enumerate(stores[:3]):
        rows = await database_sync_to_async(
            lambda store=store: list(DocumentUpdate.objects.filter(workspace_id=store.workspace)
                                     .order_by("id").values_list("data", flat=True)))()
        assert [bytes(row) for row in rows] == [f"{i}".encode(), b"second"]
        assert second[i] > results[i]  # type: ignore[operator]
    stale_rows = await database_sync_to_async(DocumentUpdate.objects.filter(workspace_id=stale.workspace).count)()
    assert stale_rows == 0
    await database_sync_to_async(connections.close_all)()


def _event(i: int) -> StoredEvent:
    delta = TurnDelta(turn="t1", text=f"text {i}")
    return StoredEvent(seq=i + 1, first_seq=i + 1, event=delta, at=1000 + i, until=1000 + i)


async def test_a_write_that_fails_in_a_trip_fails_alone(transactional_db: None, django_user_model: Any) -> None:
    """A row the database refuses (an event-log seq stored already) fails that write only:
    the trip's other writes, of that room and others, are saved."""
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="barbara")
    stores = []
    for name in ("p", "q"):
        workspace = await database_sync_to_async(workspace_create)(owner=owner, name=name, files={"a.py": ""})
        stores.append(DatabaseRoomStore(workspace.id))
        await database_sync_to_async(stores[-1]._open)()
    await stores[0].append_events([_event(0)])
    results = await asyncio.gather(
        stores[0].append_events([_event(0)]), stores[0].append_update(b"p1"), stores[1].append_update(b"q1"),
        return_exceptions=True,
    )
    assert isinstance(results[0], IntegrityError)
    assert isinstance(results[1], int) and isinstance(results[2], int)
    assert len(await stores[0].events_after(0, limit=10)) == 1
    await database_sync_to_async(connections.close_all)()


async def test_a_rooms_next_update_joins_the_trip_after_the_one_that_saved_its_last(
    transactional_db: None, django_user_model: Any,
) -> None:
    """A room sends its next update to be saved as soon as its last is: that update goes in
    the very next trip, with what the other rooms put while the last trip was in flight (not
    in a trip of its own after theirs)."""
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    stores = []
    for name in ("a", "b"):
        workspace = await database_sync_to_async(workspace_create)(owner=owner, name=name, files={"a.py": ""})
        stores.append(DatabaseRoomStore(workspace.id))
        await database_sync_to_async(stores[-1]._open)()
    first, other = stores
    writer = appends()
    trips = writer.trips

    async def room_a() -> None:
        await first.append_update(b"a1")
        await first.append_update(b"a2")  # at once, as a pipeline with more waiting does

    async def room_b() -> None:
        while writer.trips == trips:  # a1's trip is in flight
            await asyncio.sleep(0)
        await other.append_update(b"b1")

    await asyncio.gather(room_a(), room_b())
    assert writer.trips == trips + 2  # a1; then b1 and a2 together
    await database_sync_to_async(connections.close_all)()


async def test_a_room_that_stops_waiting_does_not_stop_the_others_write(
    transactional_db: None, django_user_model: Any,
) -> None:
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="hedy")
    stores = []
    for name in ("x", "y"):
        workspace = await database_sync_to_async(workspace_create)(owner=owner, name=name, files={"a.py": ""})
        stores.append(DatabaseRoomStore(workspace.id))
        await database_sync_to_async(stores[-1]._open)()
    leaving = asyncio.create_task(stores[0].append_update(b"left"))
    staying = asyncio.create_task(stores[1].append_update(b"stayed"))
    await asyncio.sleep(0)
    leaving.cancel()
    assert await staying > 0
    with pytest.raises(asyncio.CancelledError):
        await leaving
    written = await database_sync_to_async(
        lambda: sorted(bytes(d) for d in DocumentUpdate.objects.values_list("data", flat=True)))()
    assert written == [b"left", b"stayed"]  # the write it asked for was made: only the wait ended
    await database_sync_to_async(connections.close_all)()


async def test_the_rooms_writer_works_whatever_context_starts_it(
    transactional_db: None, django_user_model: Any,
) -> None:
    """The writer of every room's rows runs in a context of its own: started by a caller whose
    context says a thread-sensitive call is running (asgiref's flag, as a task inherits it),
    its trips still go through (on SQLite they are such calls, and failed: "would deadlock")."""
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    workspace = await database_sync_to_async(workspace_create)(owner=owner, name="w", files={"a.py": ""})
    store = DatabaseRoomStore(workspace.id)
    await database_sync_to_async(store._open)()

    async def flagged() -> None:
        SyncToAsync.deadlock_context.set(True)
        await store.append_events([_event(0)])
        assert isinstance(await store.append_update(b"u"), int)

    await asyncio.create_task(flagged())  # the flag stays in that task's context
    assert [entry.seq for entry in await store.events_after(0, limit=10)] == [1]
    await database_sync_to_async(connections.close_all)()
