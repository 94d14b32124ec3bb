"""One room served by many processes (DESIGN.md §4; docs/cluster.md).

One process *owns* a workspace's room: its document, its Pilot, its storage writes. It holds
the room under a lease (``Lease``, Redis in production) and a fencing epoch kept in storage
(``RoomStore.open`` starts a new one; a write under an older epoch is refused there), so a
stale owner can never persist after losing the room.

Any other process that serves a participant of the room holds a ``Replica``: a stand-in with
the room's methods the consumer uses. It forwards what its connections send (document
updates, awareness, commands) to the owner's channel over the bus (the Channels layer), and
fans out to its connections what the owner publishes.

The owner publishes one ordered stream per room on a bus group (``GroupLink``): events,
document updates and awareness for everyone, and items addressed to one remote connection
(its join, its answers). One stream keeps the cut between a joining connection's catch-up
and the live events exact, as within one process: a remote connection takes the broadcasts
that follow the first item addressed to it, and no later item is merged past an addressed
one. When the owner goes (closed, lost its lease, died), every replica closes its
connections with a "reconnect" code; they come back with ``?after=<seq>`` to whichever
process owns the room next, and resume or resync from the stored state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .background import Background
from .doc_rules import malformed_yjs
from .events import ErrorEvent, Event, Role, TurnDelta, TurnProse
from .outbox import Backlog, Barrier, DocUpdate, Frame, RawBinary, TextRun
from .transport import Connection, LocalTransport
from .turns import CommandKind

log = logging.getLogger(__name__)

LEASE_TTL_S = 2.5  # an owner that stops renewing loses its rooms this long after
RENEW_EVERY_S = 0.6
WATCH_EVERY_S = 0.5  # how often a replica checks that its owner still holds the room
REPLICA_SILENT_S = 5.0  # an owner forgets a replica's connections after this long without a word
JOIN_TIMEOUT_S = 5.0

REQUEST_TIMEOUT_S = 5.0


class Bus(Protocol):
    """The part of a Channels layer the cluster uses (``channels.layers.BaseChannelLayer``)."""

    async def new_channel(self, prefix: str = ...) -> str: ...

    async def send(self, channel: str, message: dict[str, Any]) -> None: ...

    async def receive(self, channel: str) -> dict[str, Any]: ...

    async def group_add(self, group: str, channel: str) -> None: ...

    async def group_discard(self, group: str, channel: str) -> None: ...

    async def group_send(self, group: str, message: dict[str, Any]) -> None: ...


class Lease(Protocol):
    """Who owns which room: a holder name per workspace that expires unless renewed."""

    async def acquire(self, workspace: str, holder: str) -> bool:
        """Take the room if nobody holds it."""

    async def renew(self, workspace: str, holder: str) -> bool:
        """Still ours? Only while the key still names us: a lease that vanished (a Redis
        restart) is given up, not taken back, because what the owner published meanwhile is
        lost and the replicas cannot tell; the room closes and everyone reconnects and resyncs."""

    async def holder(self, workspace: str) -> str | None: ...

    async def release(self, workspace: str, holder: str) -> None:
        """Let go, if we still hold it."""


@dataclass(frozen=True)
class Cluster:
    """What a process needs to share rooms with others."""

    bus: Bus
    lease: Lease


def room_group(workspace: str) -> str:
    return f"spark.room.{workspace}"


# -- the owner's stream ----------------------------------------------------------------------

# Wire items of a stream message ({"type": "room.stream", "items": [...]}), lists so that
# msgpack carries them as they are:
#   ["t", seq, "d"|"p", turn, text]   a turn's delta or prose (merged runs included)
#   ["f", seq, text]                  any other event, as its encoded frame
#   ["R", seq, text]                  ``document.replaced``, as its encoded frame
#   ["u", update]                     a persisted document update
#   ["a", message, skip]              awareness for everyone but connection ``skip``
#   ["d", conn, item]                 an item (one of the above but "a") for one connection
#   ["h", conn]                       hang up on that connection (removed from the room)
#   ["m", conn]                       that connection is unknown here: it reconnects
#   ["x"]                             the owner let go of the room: reconnect


def _wire(item: Frame | TextRun | DocUpdate | RawBinary) -> list[Any]:
    if isinstance(item, TextRun):
        return ["t", item.seq, "d" if item.kind is TurnDelta else "p", item.turn, "".join(item.parts)]
    if isinstance(item, Frame):
        event = item.event
        if type(event) is TurnDelta or type(event) is TurnProse:
            return ["t", item.seq, "d" if type(event) is TurnDelta else "p", event.turn, event.text]
        return ["R" if event.parts_documents else "f", item.seq, item.text]
    if isinstance(item, DocUpdate):
        return ["u", item.data]
    return ["r", item.data]


@dataclass(frozen=True, slots=True)
class Relayed(Event):
    """An event another process encoded: sent on as it is."""

    type: ClassVar[str] = "relayed"
    ephemeral: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class RelayedReplacement(Relayed):
    """A ``document.replaced`` another process encoded: the outboxes here part documents at it."""

    parts_documents: ClassVar[bool] = True


def _frame(wire: list[Any]) -> Frame:
    kind = wire[0]
    if kind == "t":
        cls = TurnDelta if wire[2] == "d" else TurnProse
        return Frame(cls(turn=str(wire[3]), text=str(wire[4])), int(wire[1]))
    return Frame.encoded(RelayedReplacement() if kind == "R" else Relayed(), int(wire[1]), str(wire[2]))


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

    def put_barrier(self, wire: list[Any]) -> None:
        self._pending.add_barrier(Barrier(wire))
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
        wire = [item.payload if isinstance(item, Barrier) else _wire(item) for item in items]
        # Numbered before it is sent: one that never arrives (a failed publish, a subscriber
        # reconnecting to Redis meanwhile) is a gap the replicas see in the next one's number.
        self.sent += 1
        await self._bus.group_send(self._group, {"type": "room.stream", "n": self.sent, "items": wire})


class RemoteSink:
    """The outbox of a connection served by another process: its items go into the room's
    stream, addressed to it."""

    def __init__(self, link: GroupLink, conn: str) -> None:
        self._link = link
        self._conn = conn

    def put_frame(self, frame: Frame) -> None:
        self._link.put_barrier(["d", self._conn, _wire(frame)])

    def put_update(self, update: bytes) -> None:
        self._link.put_barrier(["d", self._conn, ["u", update]])

    def put_raw(self, message: bytes) -> None:
        self._link.put_barrier(["d", self._conn, ["r", message]])


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
            self.link.put_barrier(["a", message, skip.id if skip is not None else ""])


# -- what both a room and a replica offer the consumer ---------------------------------------


class Place(Protocol):
    """Where a connection takes part: the room itself, or a replica of it."""

    workspace: str

    @property
    def closed(self) -> bool: ...

    async def join(self, conn: Connection, *, after: int | None) -> None: ...

    def leave(self, conn: Connection) -> None: ...

    def tell(self, conn: Connection, event: Event) -> None: ...

    def receive_yjs(self, conn: Connection, message: bytes) -> ErrorEvent | None: ...

    def adopt(self, conn: Connection, generation: int) -> None: ...

    def command(self, conn: Connection, kind: CommandKind, **fields: Any) -> None: ...

    async def resume(self, conn: Connection, after: int) -> None: ...

    def expel(self, user_id: int) -> None: ...

    def rejoin(self) -> None: ...

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None: ...

    def run_input(self, conn: Connection, run: str, text: str) -> None: ...

    def run_stop(self, conn: Connection, run: str) -> None: ...


class OwnedRoom(Place, Protocol):
    """What the owner's desk needs of the room besides (``live.room.Room``)."""

    def expel_now(self, user_id: int) -> None: ...

    def rejoin_now(self) -> None: ...

    def set_file(self, path: str, text: str | None) -> None: ...

    def set_file_if(self, path: str, text: str | None, expected: str | None) -> bool: ...

    def move_file(self, path: str, new_path: str) -> str | None: ...

    def texts(self) -> dict[str, str]: ...

    async def store_events(self) -> None: ...

    async def close(self) -> None: ...

    def members(self) -> list[Connection]: ...


class RoomClosed(Exception):
    """The room (or the replica) closed while a connection was joining it: join the next one."""


def _describe(conn: Connection) -> dict[str, Any]:
    return {"id": conn.id, "session": conn.session, "user_id": conn.user_id, "username": conn.username,
            "role": conn.role.value, "generation": conn.generation}


_COMMAND_FIELDS = ("text", "effort", "path", "turn")


# -- the owner's side ------------------------------------------------------------------------


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
        self.link.put_barrier(["x"])
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
            message = await self.cluster.bus.receive(self.channel)
            try:
                self._handle(message)
            except Exception:
                log.exception("room %s: could not handle %s", self.room.workspace, message.get("type"))

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "room.up":
            replica = str(message["replica"])
            self._heard[replica] = time.monotonic()
            for item in message["items"]:
                self._upstream(replica, item)
        elif kind == "room.expel":
            self.room.expel_now(int(message["user"]))
        elif kind == "room.rejoin":
            self.room.rejoin_now()
        elif kind == "room.set_file":
            path, text = str(message["path"]), message["text"]
            text = None if text is None else str(text)
            if "expected" in message:  # only if the file still holds what the asker read
                expected = message["expected"]
                done = self.room.set_file_if(path, text, None if expected is None else str(expected))
            else:
                self.room.set_file(path, text)
                done = True
            self._background.spawn(self.cluster.bus.send(str(message["reply"]), {"type": "room.reply", "ok": done}))
        elif kind == "room.move_file":
            moved = self.room.move_file(str(message["path"]), str(message["new_path"]))
            self._background.spawn(self.cluster.bus.send(str(message["reply"]), {"type": "room.reply", "text": moved}))
        elif kind == "room.store_events":
            self._background.spawn(self._store_events(str(message["reply"])))
        elif kind == "room.read_files":
            answer = {"type": "room.reply", "texts": self.room.texts()}
            self._background.spawn(self.cluster.bus.send(str(message["reply"]), answer))

    async def _store_events(self, reply: str) -> None:
        try:
            await self.room.store_events()
        finally:  # the asker waits for an answer either way (a failed write is kept for later)
            await self.cluster.bus.send(reply, {"type": "room.reply"})

    def _upstream(self, replica: str, item: dict[str, Any]) -> None:
        kind = item["kind"]
        if kind == "alive":
            return
        if kind == "join":
            self._background.spawn(self._join(replica, item["conn"], item["after"]))
            return
        conn = self._remote.get(str(item["conn"]))
        if conn is None:
            if kind != "leave":  # dropped (its replica fell silent) or joined too late: start over
                self.link.put_barrier(["m", str(item["conn"])])
            return
        if kind == "leave":
            self._drop(conn.id)
        elif kind == "yjs":
            refused = self.room.receive_yjs(conn, bytes(item["data"]))
            if refused is not None:
                self.room.tell(conn, refused)
        elif kind == "adopt":
            self.room.adopt(conn, int(item["generation"]))
        elif kind == "command":
            fields = {name: item[name] for name in _COMMAND_FIELDS if name in item}
            self.room.command(conn, CommandKind(item["command"]), **fields)
        elif kind == "resume":
            self._background.spawn(self.room.resume(conn, int(item["after"])))
        elif kind == "run":
            self.room.run(conn, path=str(item["path"]), tests=bool(item["tests"]), confirm=bool(item.get("confirm")))
        elif kind == "run.input":
            self.room.run_input(conn, str(item["run"]), str(item["text"]))
        elif kind == "run.stop":
            self.room.run_stop(conn, str(item["run"]))

    async def _join(self, replica: str, described: dict[str, Any], after: int | None) -> None:
        conn_id = str(described["id"])
        conn = Connection(
            id=conn_id, session=str(described["session"]), user_id=described["user_id"],
            username=str(described["username"]), role=Role(described["role"]),
            outbox=RemoteSink(self.link, conn_id), remote=replica,
            hang_up=lambda: self.link.put_barrier(["h", conn_id]),
            move=lambda: None,  # the replica moves its own connections when we go
            generation=None if described.get("generation") is None else int(described["generation"]),
        )
        self._remote[conn_id] = conn
        try:
            await self.room.join(conn, after=after)
        except RoomClosed:
            self._remote.pop(conn_id, None)  # the replicas hear ["x"] and move everyone

    def _drop(self, conn_id: str) -> None:
        conn = self._remote.pop(conn_id, None)
        if conn is not None and not self.room.closed:
            self.room.leave(conn)


# -- the other processes' side ---------------------------------------------------------------


@dataclass(eq=False)
class _Seat:
    conn: Connection
    live: bool = False
    joined: asyncio.Future[None] | None = None


class Replica:
    """A room owned by another process, as this process's connections see it."""

    def __init__(
        self, workspace: str, *, cluster: Cluster, owner: str, on_closed: Callable[[Replica], None],
    ) -> None:
        self.workspace = workspace
        self.cluster = cluster
        self.owner = owner
        self.seq = 0
        self.channel = ""
        self._on_closed = on_closed
        self._seats: dict[str, _Seat] = {}
        self._up: list[dict[str, Any]] = []
        self._up_wake = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []
        self._background = Background()
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self._received: int | None = None  # the number of the owner's last stream message here

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self) -> None:
        self.channel = await self.cluster.bus.new_channel()
        await self.cluster.bus.group_add(room_group(self.workspace), self.channel)
        self._loops = [asyncio.ensure_future(loop()) for loop in (self._receive, self._send_up, self._watch)]

    # -- the consumer's side --------------------------------------------------------------

    async def join(self, conn: Connection, *, after: int | None) -> None:
        if self._closed:
            raise RoomClosed(self.workspace)
        seat = _Seat(conn, joined=self._loop.create_future())
        self._seats[conn.id] = seat
        self._forward({"kind": "join", "conn": _describe(conn), "after": after})
        assert seat.joined is not None
        try:
            await asyncio.wait_for(asyncio.shield(seat.joined), JOIN_TIMEOUT_S)
        except (TimeoutError, RoomClosed):
            self._seats.pop(conn.id, None)
            raise RoomClosed(self.workspace) from None

    def leave(self, conn: Connection) -> None:
        if self._seats.pop(conn.id, None) is None:
            return
        if not self._closed:
            self._forward({"kind": "leave", "conn": conn.id})
            if not self._seats:
                self._spawn_close()

    def tell(self, conn: Connection, event: Event) -> None:
        conn.outbox.put_frame(Frame(event, self.seq))

    def receive_yjs(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """Checked here as far as it can be without the document (its structure, so garbage
        never crosses the bus); the owner does the rest."""
        refused = malformed_yjs(message, conn.username)
        if refused is not None:
            return refused
        self._forward({"kind": "yjs", "conn": conn.id, "data": message})
        return None

    def adopt(self, conn: Connection, generation: int) -> None:
        self._forward({"kind": "adopt", "conn": conn.id, "generation": generation})

    def command(self, conn: Connection, kind: CommandKind, **fields: Any) -> None:
        item = {"kind": "command", "conn": conn.id, "command": kind.value}
        item.update({name: fields[name] for name in _COMMAND_FIELDS if name in fields})
        self._forward(item)

    async def resume(self, conn: Connection, after: int) -> None:
        self._forward({"kind": "resume", "conn": conn.id, "after": after})

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None:
        self._forward({"kind": "run", "conn": conn.id, "path": path, "tests": tests, "confirm": confirm})

    def run_input(self, conn: Connection, run: str, text: str) -> None:
        self._forward({"kind": "run.input", "conn": conn.id, "run": run, "text": text})

    def run_stop(self, conn: Connection, run: str) -> None:
        self._forward({"kind": "run.stop", "conn": conn.id, "run": run})

    def expel(self, user_id: int) -> None:
        """Callable from any thread, as ``Room.expel``."""
        self._loop.call_soon_threadsafe(self._spawn_send, self.owner, {"type": "room.expel", "user": user_id})

    def rejoin(self) -> None:
        """Callable from any thread, as ``Room.rejoin``."""
        self._loop.call_soon_threadsafe(self._spawn_send, self.owner, {"type": "room.rejoin"})

    def members(self) -> list[Connection]:
        return [seat.conn for seat in self._seats.values()]

    # -- to the owner -----------------------------------------------------------------------

    def _forward(self, item: dict[str, Any]) -> None:
        self._up.append(item)
        self._up_wake.set()

    async def _send_up(self) -> None:
        """What the connections send, in order, one bus message per batch."""
        while True:
            await self._up_wake.wait()
            self._up_wake.clear()
            items, self._up = self._up, []
            if not items:
                continue
            try:
                await self.cluster.bus.send(self.owner, {"type": "room.up", "replica": self.channel, "items": items})
            except Exception:
                log.warning("room %s: could not reach its owner", self.workspace, exc_info=True)
                self.let_go()
                return

    def _spawn_send(self, channel: str, message: dict[str, Any]) -> None:
        self._background.spawn(self.cluster.bus.send(channel, message))

    async def _watch(self) -> None:
        """The owner still holds the room? Say we are alive, so it keeps our connections."""
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            try:
                holder = await self.cluster.lease.holder(self.workspace)
            except Exception:
                log.warning("room %s: cannot read its lease", self.workspace, exc_info=True)
                continue
            if holder != self.owner:
                self.let_go()
                return
            self._forward({"kind": "alive"})

    # -- from the owner ---------------------------------------------------------------------

    async def _receive(self) -> None:
        while True:
            message = await self.cluster.bus.receive(self.channel)
            if message.get("type") != "room.stream":
                continue
            number = message.get("n")
            if isinstance(number, int):
                if self._received is not None and number != self._received + 1:
                    # Lost on the way (Redis pub/sub keeps nothing for a subscriber that was
                    # reconnecting): every connection here starts over from the owner.
                    log.warning("room %s: stream messages %d-%d from its owner never arrived; its "
                                "connections here reconnect", self.workspace, self._received + 1, number - 1)
                    self.let_go()
                    return
                self._received = number
            try:
                self._stream(message["items"])
            except Exception:
                log.exception("room %s: a bad stream message from its owner", self.workspace)

    def _stream(self, items: list[list[Any]]) -> None:
        for wire in items:
            kind = wire[0]
            if kind == "t" or kind == "f" or kind == "R":
                frame = _frame(wire)
                self.seq = max(self.seq, frame.seq)
                for seat in self._seats.values():
                    if seat.live:
                        seat.conn.outbox.put_frame(frame)
            elif kind == "u":
                update = bytes(wire[1])
                for seat in self._seats.values():
                    if seat.live:
                        seat.conn.outbox.put_update(update)
            elif kind == "a":
                message, skip = bytes(wire[1]), wire[2]
                for seat in self._seats.values():
                    if seat.live and seat.conn.id != skip:
                        seat.conn.outbox.put_raw(message)
            elif kind == "d":
                self._addressed(str(wire[1]), wire[2])
            elif kind == "h" or kind == "m":
                gone = self._seats.pop(str(wire[1]), None)
                if gone is not None and kind == "h":
                    gone.conn.hang_up()
                elif gone is not None:
                    gone.conn.move()
            elif kind == "x":
                self.let_go()
                return

    def _addressed(self, conn_id: str, wire: list[Any]) -> None:
        seat = self._seats.get(conn_id)
        if seat is None:  # it gave up waiting for its join (or left): the owner forgets it
            self._forward({"kind": "leave", "conn": conn_id})
            return
        if not seat.live:  # its join: everything after this in the stream is live for it
            seat.live = True
            if seat.joined is not None and not seat.joined.done():
                seat.joined.set_result(None)
        kind = wire[0]
        if kind == "u":
            seat.conn.outbox.put_update(bytes(wire[1]))
        elif kind == "r":
            seat.conn.outbox.put_raw(bytes(wire[1]))
        else:
            frame = _frame(wire)
            self.seq = max(self.seq, frame.seq)
            seat.conn.outbox.put_frame(frame)

    # -- ending -----------------------------------------------------------------------------

    def let_go(self) -> None:
        """The owner is gone: every connection reconnects (to whoever owns the room next)."""
        if self._closed:
            return
        for seat in self._seats.values():
            if seat.live:
                seat.conn.move()
            elif seat.joined is not None and not seat.joined.done():
                seat.joined.set_exception(RoomClosed(self.workspace))
        self._seats.clear()
        self._spawn_close()

    def _spawn_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._on_closed(self)
        self._background.spawn(self._close())

    async def _close(self) -> None:
        current = asyncio.current_task()
        for task in self._loops:
            if task is not current:
                task.cancel()
        with contextlib.suppress(Exception):
            if self._up:
                await self.cluster.bus.send(self.owner, {"type": "room.up", "replica": self.channel, "items": self._up})
            await self.cluster.bus.group_discard(room_group(self.workspace), self.channel)


async def ask_owner(bus: Bus, owner: str, message: dict[str, Any]) -> dict[str, Any]:
    """A request to a room's owner that waits for its answer (HTTP reads and writes)."""
    reply = await bus.new_channel()
    await bus.send(owner, {**message, "reply": reply})
    return await asyncio.wait_for(bus.receive(reply), REQUEST_TIMEOUT_S)
