"""``live.rooms.Rooms.attach``: a room still closing keeps the sockets of its own workspace
waiting until its last writes landed, and no other workspace's (the soak's final joins all
hung behind one room's close when one lock served every workspace)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace

from spark_ide.live.room import Room
from spark_ide.live.rooms import Rooms
from spark_ide.live.transport import Transport


class SlowClosingRoom(Room):
    """A room that opens at once and closes when the test lets it (its last writes pending)."""

    def __init__(self, workspace: str, on_closed: Callable[[Room], None], transport: Transport | None) -> None:
        # Room's own constructor wires a document, a Pilot and storage: none is needed here.
        self.workspace = workspace
        meter = SimpleNamespace(room_opened=lambda _: None, room_closed=lambda _: None)
        self.settings = SimpleNamespace(meter=meter)  # type: ignore[assignment]  # what Rooms reads of it
        self._closed = False
        self._done = asyncio.Event()
        self._on_closed = on_closed
        self.let_close = asyncio.Event()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        if self._closed:
            await self._done.wait()
            return
        self._closed = True
        await self.let_close.wait()
        self._done.set()
        self._on_closed(self)


def _rooms() -> tuple[Rooms, list[SlowClosingRoom]]:
    made: list[SlowClosingRoom] = []

    def factory(workspace: str, on_closed: Callable[[Room], None], transport: Transport | None) -> Room:
        made.append(SlowClosingRoom(workspace, on_closed, transport))
        return made[-1]

    return Rooms(factory), made


async def test_a_room_slow_to_close_keeps_only_its_own_workspace_waiting() -> None:
    rooms, made = _rooms()
    a = await rooms.attach("a")
    assert isinstance(a, SlowClosingRoom)
    closing = asyncio.create_task(a.close())
    await asyncio.sleep(0)
    assert a.closed

    rejoin = asyncio.create_task(rooms.attach("a"))  # waits for a's last writes
    others = await asyncio.wait_for(asyncio.gather(rooms.attach("b"), rooms.attach("c")), 1.0)
    assert [room.workspace for room in others] == ["b", "c"]
    await asyncio.sleep(0.05)
    assert not rejoin.done()

    a.let_close.set()
    await closing
    again = await asyncio.wait_for(rejoin, 1.0)
    assert again is not a and again.workspace == "a" and len(made) == 4
    assert rooms._locks == {}  # nobody holds or waits: no lock is kept per workspace


async def test_attaches_racing_for_one_workspace_open_one_room() -> None:
    rooms, made = _rooms()
    places = await asyncio.gather(*(rooms.attach("w") for _ in range(20)))
    assert len(made) == 1 and all(place is made[0] for place in places)
    assert rooms._locks == {}
