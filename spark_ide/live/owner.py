"""The owner's side of a room served by many processes (DESIGN.md §4; docs/cluster.md).

One process *owns* a workspace's room: its document, its Pilot, its storage writes. It holds
the room under a lease (``bus.Lease``, Redis in production) and a fencing epoch kept in
storage (``RoomStore.open`` starts a new one; a write under an older epoch is refused there),
so a stale owner can never persist after losing the room.

The owner publishes one ordered stream per room on a bus group (``GroupLink``): events,
document updates and awareness for everyone, and items addressed to one remote connection
(its join, its answers). One stream keeps the cut between a joining connection's catch-up
and the live events exact, as within one process: a remote connection takes the broadcasts
that follow the first item addressed to it, and no later item is merged past an addressed
one. When the owner goes (closed, lost its lease, died), every replica (``live.replica``)
closes its connections with a "reconnect" code; they come back with ``?after=<seq>`` to
whichever process owns the room next, and resume or resync from the stored state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from .background import Background
from .bus import Bus, Cluster, decode, encode, send
from .bus_messages import (
    Addressed,
    Adopt,
    Alive,
    AwarenessItem,
    BadMessage,
    CommandItem,
    ConnItem,
    HangUp,
    Join,
    Leave,
    Message,
    OwnerGone,
    RawItem,
    RemoteConn,
    Request,
    Resume,
    RoomExpel,
    RoomMoveFile,
    RoomReadFiles,
    RoomRejoin,
    RoomReply,
    RoomSetFile,
    RoomSettings,
    RoomStoreEvents,
    RoomStream,
    RoomUp,
    Run,
    RunInput,
    RunStop,
    StreamItem,
    Unknown,
    UpdateItem,
    UpItem,
    Yjs,
    conn_item,
)
from .outbox import Backlog, Barrier, Frame
from .room_files import RoomFiles
from .transport import Connection, LocalTransport, Place, RoomClosed

log = logging.getLogger(__name__)

RENEW_EVERY_S = 0.6
REPLICA_SILENT_S = 5.0  # an owner forgets a replica's connections after this long without a word


class GroupLink:
    """The owner's ordered stream to the room's group: merged while a publish is in flight
    (the outbox's rules), published as one message per batch."""

    def __init__(self, bus: Bus, group: str) -> None:
        self._bus = bus
        self._group = group
        self._pending = Backlog()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0  # stream messages numbered so far (``n``)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def put_frame(self, frame: Frame) -> None:
        self._pending.add_frame(frame)
        self._wake.set()

    def put_update(self, update: bytes) -> None:
        self._pending.add_update(update)
        self._wake.set()

    def put_barrier(self, item: StreamItem) -> None:
        """``item``, which nothing later merges past."""
        self._pending.add_barrier(Barrier(item))
        self._wake.set()

    async def close(self) -> None:
        """Publish what waits, then stop."""
        if self._task is None:
            return
        with contextlib.suppress(Exception):
            await self._publish()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._publish()
            except Exception:  # the bus is down: the replicas notice and resync; we go on
                log.warning("could not publish to %s", self._group, exc_info=True)

    async def _publish(self) -> None:
        items = self._pending.take()
        if not items:
            return
        stream = tuple(_barrier_item(item.payload) if isinstance(item, Barrier) else conn_item(item) for item in items)
        # Numbered before it is sent: one that never arrives (a failed publish, a subscriber
        # reconnecting to Redis meanwhile) is a gap the replicas see in the next one's number.
        self.sent += 1
        await self._bus.group_send(self._group, encode(RoomStream(self.sent, stream)))


def _barrier_item(payload: object) -> StreamItem:
    if not isinstance(payload, StreamItem):
        raise TypeError(f"a barrier of a room's stream holds a stream item, not {type(payload).__name__}")
    return payload


class RemoteSink:
    """The outbox of a connection served by another process: its items go into the room's
    stream, addressed to it."""

    def __init__(self, link: GroupLink, conn: str) -> None:
        self._link = link
        self._conn = conn

    def put_frame(self, frame: Frame) -> None:
        self._put(conn_item(frame))

    def put_update(self, update: bytes) -> None:
        self._put(UpdateItem(update))

    def put_raw(self, message: bytes) -> None:
        self._put(RawItem(message))

    def _put(self, item: ConnItem) -> None:
        self._link.put_barrier(Addressed(self._conn, item))


class ClusterTransport(LocalTransport):
    """The owner's transport: its own connections as ``LocalTransport`` serves them, every
    other process's through one stream message per batch (not one per remote connection)."""

    def __init__(self, link: GroupLink) -> None:
        super().__init__()
        self.link = link
        self._remote: dict[str, Connection] = {}

    def add(self, conn: Connection) -> None:
        if conn.remote:
            self._remote[conn.id] = conn
        else:
            super().add(conn)

    def remove(self, conn: Connection) -> None:
        if conn.remote:
            self._remote.pop(conn.id, None)
        else:
            super().remove(conn)

    def members(self) -> list[Connection]:
        return super().members() + list(self._remote.values())

    def frame(self, frame: Frame) -> None:
        super().frame(frame)
        if self._remote:
            self.link.put_frame(frame)

    def update(self, update: bytes) -> None:
        super().update(update)
        if self._remote:
            self.link.put_update(update)

    def raw(self, message: bytes, *, skip: Connection | None = None) -> None:
        super().raw(message, skip=skip)
        if len(self._remote) - (1 if skip is not None and skip.id in self._remote else 0) > 0:
            self.link.put_barrier(AwarenessItem(message, skip.id if skip is not None else ""))


class OwnedRoom(Place, Protocol):
    """What the owner's desk needs of the room besides (``live.room.Room``)."""

    def expel_now(self, user_id: int) -> None: ...

    def rejoin_now(self) -> None: ...

    def settings_changed_now(self, changed: Mapping[str, Any], by: str) -> None: ...

    files: RoomFiles  # what other processes' HTTP requests ask of the room's files

    def texts(self) -> dict[str, str]: ...

    async def close(self) -> None: ...

    def members(self) -> list[Connection]: ...


class OwnerDesk:
    """The owner's inbox for one room: what replicas forward, and the lease it renews."""

    def __init__(self, room: OwnedRoom, cluster: Cluster, channel: str, link: GroupLink) -> None:
        self.room = room
        self.cluster = cluster
        self.channel = channel
        self.link = link
        self._remote: dict[str, Connection] = {}
        self._heard: dict[str, float] = {}  # replica channel -> when it last spoke
        self._background = Background()
        self._loops: list[asyncio.Task[None]] = []
        self.lost = False

    def start(self) -> None:
        self._loops = [asyncio.ensure_future(self._receive()), asyncio.ensure_future(self._keep())]

    async def stop(self) -> None:
        """The room closed: tell the replicas, publish what waits, let go of the lease."""
        for task in self._loops:
            task.cancel()
        self.link.put_barrier(OwnerGone())
        await self.link.close()
        with contextlib.suppress(Exception):
            await self.cluster.lease.release(self.room.workspace, self.channel)

    async def _keep(self) -> None:
        """Renew the lease; forget replicas that went silent (their process died)."""
        while True:
            await asyncio.sleep(RENEW_EVERY_S)
            try:
                ours = await self.cluster.lease.renew(self.room.workspace, self.channel)
            except Exception:
                log.warning("could not renew the lease of room %s", self.room.workspace, exc_info=True)
                continue  # storage fencing still protects the room; try again
            if not ours:
                log.warning("room %s: another process owns it now; closing here", self.room.workspace)
                self.lost = True
                for conn in self.room.members():
                    conn.move()
                self._background.spawn(self.room.close())
                return
            now = time.monotonic()
            for replica, heard in list(self._heard.items()):
                if now - heard > REPLICA_SILENT_S:
                    del self._heard[replica]
                    for conn in [c for c in self._remote.values() if c.remote == replica]:
                        self._drop(conn.id)

    async def _receive(self) -> None:
        while True:
            wire = await self.cluster.bus.receive(self.channel)
            try:
                self._handle(decode(wire))
            except BadMessage:
                log.exception("room %s: a bad message on its channel", self.room.workspace)
            except Exception:
                log.exception("room %s: could not handle %s", self.room.workspace, wire.get("type"))

    def _handle(self, message: Message) -> None:
        if isinstance(message, RoomUp):
            self._heard[message.replica] = time.monotonic()
            for item in message.items:
                self._upstream(message.replica, item)
        elif isinstance(message, RoomExpel):
            self.room.expel_now(message.user)
        elif isinstance(message, RoomRejoin):
            self.room.rejoin_now()
        elif isinstance(message, RoomSettings):
            self.room.settings_changed_now(message.changed, message.by)
        elif isinstance(message, RoomSetFile | RoomMoveFile | RoomStoreEvents | RoomReadFiles):
            self._answer(message)

    def _answer(self, request: Request) -> None:
        """An HTTP thread's request: done, and answered on its reply channel."""
        if isinstance(request, RoomStoreEvents):
            self._background.spawn(self._store_events(request.reply))
            return
        if isinstance(request, RoomSetFile) and request.conditional:  # only if the file still holds what was read
            reply = RoomReply(ok=self.room.files.set_file_if(request.path, request.text, request.expected))
        elif isinstance(request, RoomSetFile):
            self.room.files.set_file(request.path, request.text)
            reply = RoomReply(ok=True)
        elif isinstance(request, RoomMoveFile):
            reply = RoomReply(text=self.room.files.move_file(request.path, request.new_path))
        else:
            reply = RoomReply(texts=self.room.texts())
        self._background.spawn(send(self.cluster.bus, request.reply, reply))

    async def _store_events(self, reply: str) -> None:
        try:
            await self.room.files.store_events()
        finally:  # the asker waits for an answer either way (a failed write is kept for later)
            await send(self.cluster.bus, reply, RoomReply())

    def _upstream(self, replica: str, item: UpItem) -> None:
        if isinstance(item, Alive):
            return
        if isinstance(item, Join):
            self._background.spawn(self._join(replica, item.conn, item.after))
            return
        conn = self._remote.get(item.conn)
        if conn is None:
            if not isinstance(item, Leave):  # dropped (its replica fell silent) or joined too late: start over
                self.link.put_barrier(Unknown(item.conn))
            return
        if isinstance(item, Leave):
            self._drop(conn.id)
        elif isinstance(item, Yjs):
            refused = self.room.receive_yjs(conn, item.data)
            if refused is not None:
                self.room.tell(conn, refused)
        elif isinstance(item, Adopt):
            self.room.adopt(conn, item.generation)
        elif isinstance(item, CommandItem):
            self.room.command(conn, item.command, **item.fields())
        elif isinstance(item, Resume):
            self._background.spawn(self.room.resume(conn, item.after))
        elif isinstance(item, Run):
            self.room.run(conn, path=item.path, tests=item.tests, confirm=item.confirm)
        elif isinstance(item, RunInput):
            self.room.run_input(conn, item.run, item.text)
        elif isinstance(item, RunStop):
            self.room.run_stop(conn, item.run)

    async def _join(self, replica: str, described: RemoteConn, after: int | None) -> None:
        conn_id = described.id
        conn = Connection(
            id=conn_id, session=described.session, user_id=described.user_id,
            username=described.username, role=described.role,
            outbox=RemoteSink(self.link, conn_id), remote=replica,
            hang_up=lambda: self.link.put_barrier(HangUp(conn_id)),
            move=lambda: None,  # the replica moves its own connections when we go
            generation=described.generation,
        )
        self._remote[conn_id] = conn
        try:
            await self.room.join(conn, after=after)
        except RoomClosed:
            self._remote.pop(conn_id, None)  # the replicas hear OwnerGone and move everyone

    def _drop(self, conn_id: str) -> None:
        conn = self._remote.pop(conn_id, None)
        if conn is not None and not self.room.closed:
            self.room.leave(conn)
