"""One room served by two sets of rooms sharing Redis (``live.cluster``), as two processes
would: each set has its own channel layer connection and the same Redis lease. The real
two-process run (two Daphne) is tests/pairing/test_two_processes.py; here every step can
be looked at closely and the owner's death staged without killing the test's process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.db import connections
from django.urls import path

from spark_ide.live.bus import Cluster
from spark_ide.live.replica import Replica
from spark_ide.live.room import Room
from spark_ide.live.rooms import Rooms
from spark_ide.pairing.adapter import StaleOwner, make_room
from spark_ide.pairing.cluster import RedisLease, RemoteDocument
from spark_ide.pairing.consumer import SessionConsumer
from spark_ide.pairing.models import Participant, RoomEvent, Turn
from spark_ide.pairing.models import Room as RoomRow
from spark_ide.pairing.ws_auth import SessionSocketAuth
from tests.conftest import port_open, require
from tests.support.peer import mergeable
from tests.support.waits import eventually

from .conftest import Live, LiveClient, connect, say, token_for

# The services pass runs it again: the lease and bus in Redis, the epoch fencing in the database.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("model_server"), pytest.mark.services]

REDIS = "redis://127.0.0.1:6379/3"
BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\nY = 3\n</new_text>\n</edit>\n'


class Process:
    """The rooms of one (pretend) process and the ASGI app that serves its sockets."""

    def __init__(self) -> None:
        self.layer = RedisPubSubChannelLayer(hosts=[REDIS])
        self.rooms = Rooms(make_room, cluster=Cluster(bus=self.layer, lease=RedisLease(REDIS)))
        route = path("ws/sessions/<str:session_id>/", SessionConsumer.as_asgi(rooms=self.rooms))
        self.app = SessionSocketAuth(URLRouter([route]))

    async def connect(self, live: Live, token: str, after: int | None = None) -> LiveClient:
        url = f"/ws/sessions/{live.session_id}/" + ("" if after is None else f"?after={after}")
        return await connect(live, token, url, app=self.app)


@pytest.fixture
async def two(live: Live, settings: Any) -> AsyncIterator[tuple[Process, Process]]:
    require(port_open("127.0.0.1", 6379), "Redis is not running on 127.0.0.1:6379")
    settings.CELERY_TASK_ALWAYS_EAGER = True  # code runs in this process (the room's owner's)
    a, b = Process(), Process()
    yield a, b
    for process in (b, a):
        await process.rooms.close_all()
        await process.layer.flush()
    await database_sync_to_async(connections.close_all)()


async def _collaborator(live: Live, name: str, role: str) -> str:
    def make() -> Any:
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_user(username=name, password=f"pw-{name}-123")
        Participant.objects.create(session_id=live.session_id, user=user, role=role)
        return user

    return await token_for(await database_sync_to_async(make)())


def _turn_events(client: LiveClient) -> list[tuple[int, str, str]]:
    """The turn events a client holds, as (seq, type, text) in arrival order, deltas joined."""
    out: list[tuple[int, str, str]] = []
    for event in client.events:
        if event["type"].startswith(("turn.", "edit.")):
            out.append((event["seq"], event["type"], event.get("text", "")))
    return out


def _text_by_type(client: LiveClient, kind: str) -> str:
    return "".join(e.get("text", "") for e in client.events if e["type"] == kind)


async def test_a_room_is_served_by_two_processes(live: Live, two: tuple[Process, Process]) -> None:
    a, b = two
    driver = await a.connect(live, live.owner_token)
    viewer = await b.connect(live, await _collaborator(live, "vic", "viewer"))
    helper = await b.connect(live, await _collaborator(live, "cole", "collaborator"))
    assert isinstance(a.rooms.held(live.workspace_id), Room)
    assert isinstance(b.rooms.held(live.workspace_id), Replica)
    for client in (driver, viewer, helper):  # everyone sees everyone, wherever they are served
        await client.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 3)

    # The driver (on A) prompts; a collaborator on B steers it; everyone sees one sequence.
    await driver.send({"type": "prompt", "text": say(" ".join(f"count{i}" for i in range(300)), rate=300)})
    await viewer.until(lambda e: e["type"] == "turn.delta")
    # (on the lines of a file: the range goes through the bus too)
    lines = {"path": "util.py", "line": 1}
    await helper.send({"type": "steer", "text": say("Now the edit.\n" + BLOCK), "range": lines})
    for client in (driver, viewer, helper):
        await client.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed", timeout=15)
        await client.until_true(lambda c=client: c.text("util.py") == "X = 2\nY = 3\n")
    assert viewer.of("turn.started")[1]["range"] == {"path": "util.py", "from_line": 1, "to_line": 1}
    steered = driver.of("turn.finished")[0]
    assert steered["status"] == "steered"
    seqs = {name: [seq for seq, _, _ in _turn_events(c)] for name, c in (("a", driver), ("v", viewer), ("h", helper))}
    for name, numbers in seqs.items():
        assert numbers == sorted(numbers), f"{name} got events out of order"
    # Deltas may arrive merged differently per connection; the text and the structure agree.
    for kind in ("turn.delta", "turn.prose"):
        assert _text_by_type(viewer, kind) == _text_by_type(driver, kind) == _text_by_type(helper, kind)
    structure = [[(e["seq"], e["type"]) for e in c.events if not mergeable(e)] for c in (driver, viewer, helper)]
    assert structure[0] == structure[1] == structure[2]

    # A person's edit on B reaches the owner's document and the driver on A.
    await helper.type_text("app.py", 0, "# shared\n")
    await driver.until_true(lambda: (driver.text("app.py") or "").startswith("# shared\n"))
    room = a.rooms.held(live.workspace_id)
    assert isinstance(room, Room)
    await asyncio.sleep(0.3)
    assert room.texts()["app.py"].startswith("# shared\n")

    # A viewer on B cannot write, and is told so by the owner.
    await viewer.type_text("app.py", 0, "nope")
    error = await viewer.until(lambda e: e["type"] == "error" and e["code"] == "forbidden")
    assert "viewer" in error["message"]

    # A code run asked for on B runs at the owner, on its document; everyone sees it.
    await helper.send({"type": "run", "path": "app.py"})
    for client in (driver, viewer, helper):
        done = await client.until(lambda e: e["type"] == "run.finished")
        assert done["status"] == "ok" and done["exit_code"] == 0

    # A settings change told on B (a PATCH served there) reaches every page, through the owner.
    replica = b.rooms.held(live.workspace_id)
    assert isinstance(replica, Replica) and b.rooms.cluster is not None
    await asyncio.to_thread(replica.settings_changed, {"auto_test": False}, "cole")
    for client in (driver, viewer, helper):
        changed = await client.until(lambda e: e["type"] == "workspace.settings")
        assert (changed["changed"], changed["by"]) == ({"auto_test": False}, "cole")

    # HTTP on B reads and writes the owner's live document (a request thread, as in a view).
    remote = RemoteDocument(b.rooms.cluster, replica.owner)
    await asyncio.to_thread(remote.apply_file, "notes.md", "from HTTP on B\n")
    await driver.until_true(lambda: driver.text("notes.md") == "from HTTP on B\n")
    texts = await asyncio.to_thread(remote.read_files)
    assert texts["notes.md"] == "from HTTP on B\n" and texts["app.py"].startswith("# shared\n")
    # A conditional write (a teacher's push): only over the text it was read as.
    assert not await asyncio.to_thread(remote.replace_file_if, "notes.md", "pushed\n", "stale\n")
    assert await asyncio.to_thread(remote.replace_file_if, "notes.md", "pushed\n", "from HTTP on B\n")
    assert await asyncio.to_thread(remote.replace_file_if, "new.md", "fresh\n", None)
    await driver.until_true(lambda: driver.text("notes.md") == "pushed\n" and driver.text("new.md") == "fresh\n")
    # A rename moves the live text in one change; one onto a taken path changes nothing.
    assert await asyncio.to_thread(remote.rename_file, "new.md", "docs/new.md") == "fresh\n"
    assert await asyncio.to_thread(remote.rename_file, "notes.md", "docs/new.md") is None
    await driver.until_true(lambda: driver.text("docs/new.md") == "fresh\n" and driver.text("new.md") is None)
    # A replay asked for on B: the owner stores the turn events it sent, then answers.
    sent = max(seq for seq, _, _ in _turn_events(driver))
    await remote.store_events()
    stored = await database_sync_to_async(
        lambda: max(RoomEvent.objects.filter(workspace_id=live.workspace_id).values_list("seq", flat=True))
    )()
    assert stored >= sent

    # The owner replaces its document: the pages on B adopt it through their replica, and what
    # the collaborator on B types into it reaches the owner and the driver on A.
    room.replace_document()
    for client in (driver, viewer, helper):
        replaced = await client.until(lambda e: e["type"] == "document.replaced")
        assert replaced["generation"] == room.generation == 1
    await helper.type_text("util.py", 0, "# after the replacement\n")
    for client in (driver, viewer):
        await client.until_true(lambda c=client: (c.text("util.py") or "").startswith("# after the replacement\n"))
    assert room.texts()["util.py"] == helper.text("util.py") == viewer.text("util.py") == driver.text("util.py")

    # The owner removes the viewer: its socket on B is closed as refused, presence follows.
    last_presence = [e for e in driver.events if e["type"] == "presence"][-1]
    vic_id = next(person["user_id"] for person in last_presence["participants"] if person["user"] == "vic")
    room.expel(vic_id)
    await viewer.until(lambda e: e["type"] == "error" and e["message"] == "you were removed from this workspace")
    with pytest.raises(ConnectionError, match="4403"):
        await viewer.until(lambda e: False, timeout=3)
    await driver.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    for client in (driver, helper):
        await client.close()


def _watch(room: Room, write: str) -> list[BaseException | None]:
    """How each call of ``room``'s store's ``write`` went (None: stored), in order."""
    tried: list[BaseException | None] = []
    method = getattr(room.store, write)

    async def watched(*args: Any) -> Any:
        try:
            result = await method(*args)
        except Exception as exc:
            tried.append(exc)
            raise
        tried.append(None)
        return result

    setattr(room.store, write, watched)
    return tried


async def _turns(live: Live) -> list[tuple[str, str, str]]:
    """The session's turns as stored: (id, status, reason), oldest first."""
    rows = Turn.objects.filter(session_id=live.session_id).order_by("created_at")
    turns: list[tuple[str, str, str]] = await database_sync_to_async(
        lambda: [(str(t.id), t.status, t.reason) for t in rows]
    )()
    return turns


async def test_the_room_moves_when_its_owner_dies(live: Live, two: tuple[Process, Process]) -> None:
    a, b = two
    driver = await a.connect(live, live.owner_token)
    watcher_token = await _collaborator(live, "wes", "collaborator")
    watcher = await b.connect(live, watcher_token)
    await driver.send({"type": "prompt", "text": say(" ".join(f"word{i}" for i in range(1500)), rate=100)})
    running = (await watcher.until(lambda e: e["type"] == "turn.delta"))["turn"]
    await watcher.type_text("util.py", 0, "# kept\n")
    await driver.until_true(lambda: (driver.text("util.py") or "").startswith("# kept\n"))
    room = a.rooms.held(live.workspace_id)
    assert isinstance(room, Room)
    epoch_before = room.epoch

    # A "dies": its owner desk stops answering and renewing, its room keeps running as a
    # stalled process's would (it must not be able to write after B takes over).
    desk = a.rooms._desks[live.workspace_id]
    for task in desk._loops:
        task.cancel()
    # B closes the watcher's socket once it holds the lease: reconnect. (The 10 s only bounds a
    # takeover that never comes; how long one takes is the fanout benchmark's takeover figure.)
    stores, ends = _watch(room, "append_events"), _watch(room, "turn_finished")
    with pytest.raises(ConnectionError):
        await watcher.until(lambda e: False, timeout=10)
    last = max(e["seq"] for e in watcher.events if "seq" in e)
    watcher = await b.connect(live, watcher_token, after=last)
    new_room = b.rooms.held(live.workspace_id)
    assert isinstance(new_room, Room) and new_room.epoch > epoch_before
    # The turn that was running is recorded as lost by its owner; the watcher is told.
    lost = await watcher.until(lambda e: e["type"] == "turn.finished" and e.get("reason") == "owner_lost")
    assert (lost["turn"], lost["status"]) == (running, "failed")
    await watcher.until_true(lambda: (watcher.text("util.py") or "").startswith("# kept\n"))

    # The stale owner's writes are refused from now on (fencing by epoch): the stale room
    # goes on streaming, and storing its turn's events is refused.
    row = await database_sync_to_async(RoomRow.objects.get)(workspace_id=live.workspace_id)
    assert row.epoch == new_room.epoch
    await eventually(lambda: any(isinstance(outcome, StaleOwner) for outcome in stores), timeout_s=10)
    assert await _turns(live) == [(running, "failed", "owner_lost")]

    # Work goes on, on B.
    await watcher.send({"type": "prompt", "text": say("After the move.\n" + BLOCK)})
    await watcher.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed", timeout=15)
    await watcher.until_true(lambda: "X = 2" in (watcher.text("util.py") or ""))
    await room.close()  # the stale room ends its turn as it closes: recording that end is refused
    assert ends and all(isinstance(outcome, StaleOwner) for outcome in ends), ends
    assert (await _turns(live))[0] == (running, "failed", "owner_lost")
    await driver.comm.disconnect()
    await watcher.close()


async def test_a_socket_the_owner_forgot_is_told_to_reconnect(live: Live, two: tuple[Process, Process]) -> None:
    """The owner drops a replica's sockets when it falls silent; if one of them speaks again
    it is moved (closed with 4012) rather than ignored, and comes back whole."""
    a, b = two
    driver = await a.connect(live, live.owner_token)
    token = await _collaborator(live, "cole", "collaborator")
    cole = await b.connect(live, token)
    await driver.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    desk = a.rooms._desks[live.workspace_id]
    (forgotten,) = list(desk._remote)
    desk._drop(forgotten)  # as if its replica had been silent too long
    await driver.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 1)
    await cole.send({"type": "prompt", "text": say("Hello again.\n")})
    with pytest.raises(ConnectionError, match="4012"):
        await cole.until(lambda e: False, timeout=5)
    last = max(e["seq"] for e in cole.events if "seq" in e)
    cole = await b.connect(live, token, after=last)
    await cole.send({"type": "prompt", "text": say("Hello again.\n")})
    await cole.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed")
    await driver.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed")
    await asyncio.gather(driver.close(), cole.close())


async def test_a_replica_that_missed_stream_messages_sends_its_sockets_back(
    live: Live, two: tuple[Process, Process]
) -> None:
    """Redis pub/sub keeps nothing for a subscriber that is reconnecting: stream messages
    published meanwhile never reach the replica. The owner numbers its stream; the replica
    sees the gap in the next number and moves its sockets (4012), which come back whole."""
    a, b = two
    driver = await a.connect(live, live.owner_token)
    token = await _collaborator(live, "cole", "collaborator")
    cole = await b.connect(live, token)
    await driver.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    replica = b.rooms.held(live.workspace_id)
    assert isinstance(replica, Replica)
    receive = b.layer.receive
    lost: list[Any] = []

    async def losing_one(channel: str) -> Any:  # the subscriber's reconnect: one message gone
        message = await receive(channel)
        while channel == replica.channel and message.get("type") == "room.stream" and not lost:
            lost.append(message)
            message = await receive(channel)
        return message

    b.layer.receive = losing_one
    await driver.type_text("app.py", 0, "# seen\n")  # (taken by the receive already waiting)
    await cole.until_true(lambda: (cole.text("app.py") or "").startswith("# seen\n"))
    await driver.type_text("app.py", 0, "# lost on the way\n")
    # Its stream message gone before the next edit is typed (typed at once, both go in one message).
    await eventually(lambda: bool(lost))
    await driver.type_text("app.py", 0, "# after it\n")
    with pytest.raises(ConnectionError, match="4012"):
        await cole.until(lambda e: False, timeout=5)
    assert lost and "# lost on the way" not in (cole.text("app.py") or "")
    last = max(e["seq"] for e in cole.events if "seq" in e)
    cole = await b.connect(live, token, after=last)
    await cole.until_true(lambda: (cole.text("app.py") or "").startswith("# after it\n# lost on the way\n# seen\n"))
    await asyncio.gather(driver.close(), cole.close())
