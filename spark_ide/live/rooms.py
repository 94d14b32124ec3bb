"""The rooms this process holds, one per workspace, opened on first use."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .room import Room

RoomFactory = Callable[[str, Callable[[Room], None]], Room]
"""Builds the room of a workspace; the callable it is given must run when the room closes."""


class Rooms:
    def __init__(self, factory: RoomFactory) -> None:
        self._factory = factory
        self._rooms: dict[str, Room] = {}
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def attach(self, workspace: str) -> Room:
        """The workspace's room, opened if this process does not hold it yet."""
        async with self._guard():
            room = self._rooms.get(workspace)
            if room is not None and room.closed:
                await room.wait_closed()  # its last writes land before a new room reads them
                room = None
            if room is None:
                room = self._factory(workspace, self._forget)
                await room.open()
                self._rooms[workspace] = room
                room.settings.meter.room_opened(workspace)
            return room

    def held(self, workspace: str) -> Room | None:
        room = self._rooms.get(workspace)
        return None if room is None or room.closed else room

    def _forget(self, room: Room) -> None:
        if self._rooms.get(room.workspace) is room:
            del self._rooms[room.workspace]
            room.settings.meter.room_closed(room.workspace)

    async def close_all(self) -> None:
        for room in list(self._rooms.values()):
            await room.close()
        self._rooms.clear()
