"""A room owned by another process, as this process's connections see it (docs/cluster.md).

Any process that serves a participant of a room it does not own holds a ``Replica``: a
stand-in with the room's methods the consumer uses (``transport.Place``). It forwards what
its connections send (document updates, awareness, commands) to the owner's channel over the
bus, and fans out to its connections what the owner publishes on the room's stream
(``live.owner``). A connection takes the broadcasts that follow the first item addressed to
it (its join). When the owner goes, every connection here reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .background import Background
from .bus import Cluster, decode, encode, room_group, send
from .bus_messages import (
    Addressed,
    Adopt,
    Alive,
    AwarenessItem,
    CommandItem,
    ConnItem,
    EventItem,
    HangUp,
    Join,
    Leave,
    Message,
    OwnerGone,
    RawItem,
    RemoteConn,
    Resume,
    RoomExpel,
    RoomModel,
    RoomRejoin,
    RoomSettings,
    RoomStream,
    RoomUp,
    Run,
    RunInput,
    RunStop,
    TextItem,
    Unknown,
    UpdateItem,
    UpItem,
    Yjs,
    frame_of,
)
from .doc_rules import malformed_yjs
from .events import ErrorEvent, Event
from .outbox import Frame
from .transport import Connection, RoomClosed
from .turns import CommandKind

log = logging.getLogger(__name__)

WATCH_EVERY_S = 0.5  # how often a replica checks that its owner still holds the room
JOIN_TIMEOUT_S = 5.0


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
        self._up: list[UpItem] = []
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
        self._forward(Join(RemoteConn(
            id=conn.id, session=conn.session, user_id=conn.user_id, username=conn.username, role=conn.role,
            generation=conn.generation,
        ), after))
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
            self._forward(Leave(conn.id))
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
        self._forward(Yjs(conn.id, message))
        return None

    def adopt(self, conn: Connection, generation: int) -> None:
        self._forward(Adopt(conn.id, generation))

    def command(self, conn: Connection, kind: CommandKind, **fields: Any) -> None:
        given = {name: fields[name] for name in CommandItem.NAMES if fields.get(name) is not None}
        self._forward(CommandItem(conn=conn.id, command=kind, **given))

    async def resume(self, conn: Connection, after: int) -> None:
        self._forward(Resume(conn.id, after))

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None:
        self._forward(Run(conn.id, path, tests, confirm))

    def run_input(self, conn: Connection, run: str, text: str) -> None:
        self._forward(RunInput(conn.id, run, text))

    def run_stop(self, conn: Connection, run: str) -> None:
        self._forward(RunStop(conn.id, run))

    def expel(self, user_id: int) -> None:
        """Callable from any thread, as ``Room.expel``."""
        self._loop.call_soon_threadsafe(self._spawn_send, RoomExpel(user_id))

    def rejoin(self) -> None:
        """Callable from any thread, as ``Room.rejoin``."""
        self._loop.call_soon_threadsafe(self._spawn_send, RoomRejoin())

    def settings_changed(self, changed: Mapping[str, Any], by: str) -> None:
        """Callable from any thread, as ``Room.settings_changed``: the owner tells everyone."""
        self._loop.call_soon_threadsafe(self._spawn_send, RoomSettings(dict(changed), by))

    def model_changed(self) -> None:
        """Callable from any thread, as ``Room.model_changed``."""
        self._loop.call_soon_threadsafe(self._spawn_send, RoomModel())

    def members(self) -> list[Connection]:
        return [seat.conn for seat in self._seats.values()]

    # -- to the owner -----------------------------------------------------------------------

    def _forward(self, item: UpItem) -> None:
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
                await send(self.cluster.bus, self.owner, RoomUp(self.channel, tuple(items)))
            except Exception:
                log.warning("room %s: could not reach its owner", self.workspace, exc_info=True)
                self.let_go()
                return

    def _spawn_send(self, message: Message) -> None:
        self._background.spawn(send(self.cluster.bus, self.owner, message))

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
            self._forward(Alive())

    # -- from the owner ---------------------------------------------------------------------

    async def _receive(self) -> None:
        while True:
            wire = await self.cluster.bus.receive(self.channel)
            if wire.get("type") != "room.stream":
                continue
            try:
                stream = decode(wire)
            except Exception:
                log.exception("room %s: a bad stream message from its owner", self.workspace)
                continue
            assert isinstance(stream, RoomStream)
            if self._received is not None and stream.n != self._received + 1:
                # Lost on the way (Redis pub/sub keeps nothing for a subscriber that was
                # reconnecting): every connection here starts over from the owner.
                log.warning("room %s: stream messages %d-%d from its owner never arrived; its "
                            "connections here reconnect", self.workspace, self._received + 1, stream.n - 1)
                self.let_go()
                return
            self._received = stream.n
            try:
                self._stream(stream)
            except Exception:
                log.exception("room %s: a bad stream message from its owner", self.workspace)

    def _stream(self, stream: RoomStream) -> None:
        for item in stream.items:
            if isinstance(item, TextItem | EventItem):
                frame = frame_of(item)
                self.seq = max(self.seq, frame.seq)
                for seat in self._live():
                    seat.conn.outbox.put_frame(frame)
            elif isinstance(item, UpdateItem):
                for seat in self._live():
                    seat.conn.outbox.put_update(item.data)
            elif isinstance(item, AwarenessItem):
                for seat in self._live():
                    if seat.conn.id != item.skip:
                        seat.conn.outbox.put_raw(item.message)
            elif isinstance(item, Addressed):
                self._addressed(item.conn, item.item)
            elif isinstance(item, HangUp | Unknown):
                gone = self._seats.pop(item.conn, None)
                if gone is not None and isinstance(item, HangUp):
                    gone.conn.hang_up()
                elif gone is not None:
                    gone.conn.move()
            elif isinstance(item, OwnerGone):
                self.let_go()
                return

    def _live(self) -> list[_Seat]:
        return [seat for seat in self._seats.values() if seat.live]

    def _addressed(self, conn_id: str, item: ConnItem) -> None:
        seat = self._seats.get(conn_id)
        if seat is None:  # it gave up waiting for its join (or left): the owner forgets it
            self._forward(Leave(conn_id))
            return
        if not seat.live:  # its join: everything after this in the stream is live for it
            seat.live = True
            if seat.joined is not None and not seat.joined.done():
                seat.joined.set_result(None)
        if isinstance(item, UpdateItem):
            seat.conn.outbox.put_update(item.data)
        elif isinstance(item, RawItem):
            seat.conn.outbox.put_raw(item.data)
        else:
            frame = frame_of(item)
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
                await self.cluster.bus.send(self.owner, encode(RoomUp(self.channel, tuple(self._up))))
            await self.cluster.bus.group_discard(room_group(self.workspace), self.channel)
