"""A whole room without Django: ``live.room.Room`` over ``MemoryRoomStore``, the fake model,
and one participant whose connection keeps what it is sent (frames in order, the document as
its updates arrive). For what only the room's parts together do: a storage failure that halts
the Pilot, the event log and the document as stored."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from spark_ide.live.events import Event, Role, TurnDelta, TurnEvent
from spark_ide.live.outbox import Frame
from spark_ide.live.room import Room
from spark_ide.live.store import LiveSettings
from spark_ide.live.transport import Connection
from spark_ide.live.turns import CommandKind
from tests.support.fake_model import FakeModel
from tests.support.memory_store import MemoryRoomStore
from tests.support.pilot_rig import WAIT_S
from tests.support.waits import eventually

E = TypeVar("E", bound=Event)


@dataclass
class Received:
    """What a connection was sent (``transport.Sink``)."""

    frames: list[Frame] = field(default_factory=list)
    updates: list[bytes] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)

    def put_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def put_update(self, update: bytes) -> None:
        self.updates.append(update)

    def put_raw(self, message: bytes) -> None:
        self.raw.append(message)

    def events(self) -> list[Event]:
        return [frame.event for frame in self.frames]

    def of(self, kind: type[E], turn: str | None = None) -> list[E]:
        return [
            event for event in self.events()
            if isinstance(event, kind) and (turn is None or getattr(event, "turn", None) == turn)
        ]

    async def until(self, kind: type[E], where: Callable[[E], bool] = lambda event: True) -> E:
        await eventually(lambda: any(where(event) for event in self.of(kind)), WAIT_S)
        return next(event for event in self.of(kind) if where(event))

    def answer(self, turn: str) -> str:
        return "".join(delta.text for delta in self.of(TurnDelta, turn))


@dataclass
class RoomRig:
    room: Room
    store: MemoryRoomStore
    model: FakeModel
    conn: Connection
    received: Received

    def prompt(self, text: str) -> None:
        self.room.command(self.conn, CommandKind.PROMPT, text=text)

    def turn_events(self) -> list[TurnEvent]:
        return [event for event in self.received.events() if isinstance(event, TurnEvent)]


@contextlib.asynccontextmanager
async def room_rig(files: dict[str, str], **settings: Any) -> AsyncIterator[RoomRig]:
    """An open room over ``files`` with one owner joined; closed after. ``settings``: of
    ``LiveSettings`` (the fake model's connector is given)."""
    store, model, received = MemoryRoomStore(files=dict(files)), FakeModel(), Received()
    room = Room("w1", store=store, settings=LiveSettings(connect_model=model.connect, **settings))
    await room.open()
    conn = Connection(id="c1", session="s1", user_id=7, username="ada", role=Role.OWNER, outbox=received)
    await room.join(conn, after=None)
    try:
        yield RoomRig(room=room, store=store, model=model, conn=conn, received=received)
    finally:
        store.heal()
        await room.close()

