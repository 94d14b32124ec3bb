"""Checkpoints in the database and through a live room (issue 31, part 2): stored
content-addressed (200 files, one changed: one file's bytes), pruned to the newest with the
blobs they use, restored over the socket (code for everyone, the conversation for the next
request) across a server restart, a restore undone, and the refusals that change nothing."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connections

from spark_ide.live.checkpoints import Checkpoint, CheckpointKind, addressed, new_checkpoint_id
from spark_ide.live.prompting import PastTurn
from spark_ide.pairing.adapter import ROOMS, DatabaseRoomStore
from spark_ide.pairing.checkpoints import checkpoint_list, checkpoint_storage
from spark_ide.pairing.models import Checkpoint as CheckpointRow
from spark_ide.pairing.models import CheckpointBlob
from spark_ide.replay.services import replay_data
from spark_ide.workspaces.services import workspace_create
from tests.pairing.conftest import FILES, Live, connect, connect_viewer, refused, say
from tests.support.recording_engine import RecordingEngine


def checkpoint(files: dict[str, str], *, history: tuple[PastTurn, ...] = (), **rest: Any) -> Checkpoint:
    return Checkpoint(
        id=new_checkpoint_id(), kind=rest.pop("kind", CheckpointKind.TURN), files=files, history=history,
        at=round(time.time() * 1000), **rest,
    )


async def opened_store(owner: Any, name: str = "w") -> DatabaseRoomStore:
    workspace = await database_sync_to_async(workspace_create)(owner=owner, name=name, files={"a.py": "a\n"})
    store = DatabaseRoomStore(workspace.id)
    await database_sync_to_async(store._open)()
    return store


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
async def test_a_checkpoint_of_200_files_where_one_changed_stores_that_file_alone(django_user_model: Any) -> None:
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    store = await opened_store(owner)
    files = {f"pkg/m{index:03}.py": f"VALUE = {index}\n" + "# filler line\n" * 40 for index in range(200)}
    first = await store.checkpoint_save(checkpoint(files, author="ada", author_id=owner.pk), keep=200)
    assert first.blobs == 200 + 14  # the files and their 14 buckets of paths
    changed = {**files, "pkg/m007.py": files["pkg/m007.py"] + "VALUE += 1\n"}
    saved = await store.checkpoint_save(checkpoint(changed), keep=200)
    # The file, and the one bucket that lists it (about 14 paths with their keys).
    before, after = addressed(checkpoint(files)), addressed(checkpoint(changed))
    bucket = set(after.manifest) - set(before.manifest)
    assert len(bucket) == 1 and len(after.blobs[next(iter(bucket))]) < 2500
    assert (saved.blobs, saved.bytes) == (2, len(changed["pkg/m007.py"].encode()) + len(after.blobs[bucket.pop()]))
    # The same files and a past turn: the turn's text is the one new blob.
    history = (PastTurn("make it bigger", "Done."),)
    second = checkpoint(changed, history=history, turn="t2", prompt="make it bigger", author="ada", author_id=owner.pk)
    saved = await store.checkpoint_save(second, keep=200)
    assert saved.blobs == 1 and saved.bytes == len(addressed(second).blobs[addressed(second).history[0]].encode())
    assert await database_sync_to_async(CheckpointBlob.objects.count)() == 214 + 2 + 1

    loaded = await store.checkpoint_load(second.id)
    assert loaded is not None
    assert (loaded.files, loaded.history, loaded.turn, loaded.prompt, loaded.author, loaded.author_id) == (
        changed, history, "t2", "make it bigger", "ada", owner.pk,
    )
    assert loaded.kind is CheckpointKind.TURN
    storage = await database_sync_to_async(checkpoint_storage)(store.workspace)
    assert (storage.checkpoints, storage.blobs) == (3, 217)
    await database_sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
async def test_the_newest_are_kept_with_their_blobs_and_another_workspaces_id_finds_nothing(
    django_user_model: Any,
) -> None:
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    store = await opened_store(owner)
    saved = []
    for number in range(4):
        one = checkpoint({"a.py": f"A = {number}\n", "same.py": "same\n"}, name=f"n{number}", kind=CheckpointKind.NAMED)
        await store.checkpoint_save(one, keep=2)
        saved.append(one.id)
    rows = await database_sync_to_async(lambda: list(CheckpointRow.objects.values_list("checkpoint", flat=True)))()
    assert rows == saved[2:]
    texts = await database_sync_to_async(lambda: list(CheckpointBlob.objects.values_list("text", flat=True)))()
    assert "A = 0\n" not in texts and {"A = 2\n", "A = 3\n", "same\n"} <= set(texts)
    for kept, number in zip(saved[2:], (2, 3), strict=True):
        whole = await store.checkpoint_load(kept)
        assert whole is not None and whole.files == {"a.py": f"A = {number}\n", "same.py": "same\n"}
    listed = await database_sync_to_async(checkpoint_list)(store.workspace)
    assert [(entry.id, entry.name, entry.files) for entry in listed] == [(saved[3], "n3", 2), (saved[2], "n2", 2)]
    assert await store.checkpoint_load(saved[0]) is None  # pruned

    other = await opened_store(owner, "other")
    assert await other.checkpoint_load(saved[3]) is None
    assert await DatabaseRoomStore(uuid.uuid4()).checkpoint_load(saved[3]) is None
    await database_sync_to_async(connections.close_all)()


# -- through a live room ------------------------------------------------------------------------


def edit(old: str, new: str) -> str:
    return f'<edit path="util.py">\n<old_text>\n{old}\n</old_text>\n<new_text>\n{new}\n</new_text>\n</edit>\n'


async def rows(workspace: str) -> list[tuple[str, str, str]]:
    def read() -> list[tuple[str, str, str]]:
        return list(CheckpointRow.objects.filter(workspace_id=workspace).values_list("checkpoint", "kind", "turn"))

    found: list[tuple[str, str, str]] = await database_sync_to_async(read)()
    return found


async def test_restore_code_and_conversation_across_a_restart_and_undo_it(
    live: Live, model_server: Any, rooms: None, django_user_model: Any,
) -> None:
    engine: RecordingEngine = model_server.engine
    owner = await connect(live)
    turns = []
    for number in (1, 2, 3):
        answer = f"Answer {number}.\n" + edit(f"X = {number}", f"X = {number + 1}")
        await owner.send({"type": "prompt", "text": say(answer)})
        finished = await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] not in turns)
        turns.append(finished["turn"])
    assert owner.text("util.py") == "X = 4\n"
    await owner.close()
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()  # the server goes down; the checkpoints are in the database
    stored = await rows(live.workspace_id)
    assert [(kind, turn) for _, kind, turn in stored] == [("turn", turn) for turn in turns]
    before_two = stored[1][0]

    owner = await connect(live)
    viewer = await connect_viewer(live, django_user_model)
    # Bad asks change nothing: a viewer, an id nobody has, a restore that restores nothing.
    assert (await refused(viewer, {"type": "checkpoint.restore", "checkpoint": before_two, "code": True}))[
        "code"] == "forbidden"
    unknown = await refused(owner, {"type": "checkpoint.restore", "checkpoint": "cp-nope", "code": True})
    assert (unknown["code"], unknown["ref"]) == ("no_such_checkpoint", "cp-nope")
    nothing = await refused(owner, {"type": "checkpoint.restore", "checkpoint": before_two})
    assert nothing["code"] == "bad_field"
    await owner.pump(0.2)
    assert owner.text("util.py") == "X = 4\n" and len(await rows(live.workspace_id)) == 3

    await owner.send({"type": "checkpoint.restore", "checkpoint": before_two, "code": True, "conversation": True})
    notice = await viewer.until(lambda e: e["type"] == "checkpoint.restored")
    assert (notice["checkpoint"], notice["code"], notice["conversation"]) == (before_two, True, True)
    assert notice["by"] == "ada"
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 2\n" and viewer.text("app.py") == FILES["app.py"])

    # The next request starts after turn one: turns two and three are not in it.
    await owner.send({"type": "prompt", "text": say("Answer 4.")})
    await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] not in turns)
    job = engine.generations[-1].job
    assert job is not None
    conversation = "\n".join(message.content for message in job.messages)
    assert "Answer 1." in conversation
    assert "Answer 2." not in conversation and "Answer 3." not in conversation

    # The restore is undone by restoring the checkpoint taken just before it.
    await owner.send({"type": "checkpoint.restore", "checkpoint": notice["undo"], "code": True})
    await viewer.until(lambda e: e["type"] == "checkpoint.restored" and e["checkpoint"] == notice["undo"])
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 4\n")
    kinds = [kind for _, kind, _ in await rows(live.workspace_id)]
    assert kinds == ["turn", "turn", "turn", "restore", "turn", "restore"]
    await owner.close()
    await viewer.close()

    # The replay's timeline marks both restores (a teacher replaying the session sees them).
    room = ROOMS.owned(live.workspace_id)
    if room is not None:
        await room.close()  # its last events are written
    data = await database_sync_to_async(replay_data)(live.workspace_id)
    restores = [(mark["turn"], mark["text"]) for mark in data["marks"] if mark["kind"] == "restore"]
    assert restores == [
        (turns[1], "ada restored the code and the conversation"), ("", "ada restored the code"),
    ], restores


async def test_a_checkpoint_id_of_another_workspace_is_refused(
    live: Live, model_server: Any, rooms: None, django_user_model: Any,
) -> None:
    def elsewhere() -> str:
        workspace = workspace_create(owner=live.owner, name="other", files={"z.py": "z\n"})
        row = CheckpointRow.objects.create(
            checkpoint="cp-theirs", workspace=workspace, number=1, kind="named", at=0,
        )
        return row.checkpoint

    foreign = await database_sync_to_async(elsewhere)()
    owner = await connect(live)
    error = await refused(owner, {"type": "checkpoint.restore", "checkpoint": foreign, "code": True})
    assert error["code"] == "no_such_checkpoint" and "cp-theirs" in error["message"]
    await owner.send({"type": "checkpoint.create", "name": "before refactor"})
    created = await owner.until(lambda e: e["type"] == "checkpoint.created")
    assert (created["name"], created["by"]) == ("before refactor", "ada")
    await owner.pump(0.2)
    assert owner.text("util.py") == FILES["util.py"]
    assert [kind for _, kind, _ in await rows(live.workspace_id)] == ["named"]
    await owner.close()
