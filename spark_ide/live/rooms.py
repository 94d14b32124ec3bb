"""The rooms this process takes part in, one per workspace, opened on first use.

Alone (no ``Cluster``), every room is this process's own. In a cluster, the first process
to need a room takes its lease and owns it (``live.owner.OwnerDesk``); any other holds a
``Replica`` of it while its connections take part.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from .background import Background
from .bus import Cluster, room_group
from .owner import ClusterTransport, GroupLink, OwnerDesk
from .replica import Replica
from .room import Room
from .transport import Place, Transport

log = logging.getLogger(__name__)

RoomFactory = Callable[[str, Callable[[Room], None], Transport | None], Room]
"""Builds the room of a workspace: the callable it is given must run when the room closes;
the transport is None for a room of this process alone."""

ATTACH_TRIES = 20


class Rooms:
    def __init__(self, factory: RoomFactory, cluster: Cluster | None = None) -> None:
        self._factory = factory
        self.cluster = cluster
        self._places: dict[str, Room | Replica] = {}
        self._desks: dict[str, OwnerDesk] = {}
        self._background = Background()
        # One lock per workspace, on ``_locks_loop``, and how many attaches hold or wait for it.
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._locks_loop: asyncio.AbstractEventLoop | None = None

    @contextlib.asynccontextmanager
    async def _guard(self, workspace: str) -> AsyncIterator[None]:
        """One attach at a time per workspace. Per workspace, not one for all: a room that is
        slow to close (its last writes) keeps only its own workspace's sockets waiting."""
        loop = asyncio.get_running_loop()
        if self._locks_loop is not loop:
            self._locks, self._locks_loop = {}, loop
        lock, users = self._locks.setdefault(workspace, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[workspace]  # nobody holds or waits for it

    async def attach(self, workspace: str) -> Room | Replica:
        """Where this process's connections take part in the workspace's room."""
        async with self._guard(workspace):
            place: Room | Replica | None = self._places.get(workspace)
            if isinstance(place, Room) and place.closed:
                await place.wait_closed()  # its last writes land before a new room reads them
                place = None
            if place is None or place.closed:
                place = await (self._open(workspace) if self.cluster is None else self._attach(workspace, self.cluster))
                self._places[workspace] = place
            return place

    async def _open(self, workspace: str, transport: Transport | None = None) -> Room:
        room = self._factory(workspace, self._forget, transport)
        await room.open()
        room.settings.meter.room_opened(workspace)
        return room

    async def _attach(self, workspace: str, cluster: Cluster) -> Room | Replica:
        for _ in range(ATTACH_TRIES):
            owner = await cluster.lease.holder(workspace)
            if owner is None:
                channel = await cluster.bus.new_channel()
                if not await cluster.lease.acquire(workspace, channel):
                    continue  # another process was quicker: be its replica
                link = GroupLink(cluster.bus, room_group(workspace))
                try:
                    room = await self._open(workspace, ClusterTransport(link))
                except BaseException:
                    await cluster.lease.release(workspace, channel)
                    raise
                link.start()
                desk = OwnerDesk(room, cluster, channel, link)
                desk.start()
                self._desks[workspace] = desk
                return room
            replica = Replica(workspace, cluster=cluster, owner=owner, on_closed=self._forget_replica)
            await replica.start()
            return replica
        raise RuntimeError(f"could not settle who owns room {workspace}")

    def held(self, workspace: str) -> Place | None:
        place = self._places.get(workspace)
        return None if place is None or place.closed else place

    def owned(self, workspace: str) -> Room | None:
        """The workspace's room when this process owns it (and it is open)."""
        place = self._places.get(workspace)
        return place if isinstance(place, Room) and not place.closed else None

    def _forget(self, room: Room) -> None:
        if self._places.get(room.workspace) is room:
            del self._places[room.workspace]
            room.settings.meter.room_closed(room.workspace)
        desk = self._desks.pop(room.workspace, None)
        if desk is not None and desk.room is room:
            self._background.spawn(desk.stop())

    def _forget_replica(self, replica: Replica) -> None:
        if self._places.get(replica.workspace) is replica:
            del self._places[replica.workspace]

    async def close_all(self) -> None:
        """Close every room of this process and let go of every replica (a server shutting
        down: ``pairing.shutdown``; the rooms of a test)."""
        for place in list(self._places.values()):
            if isinstance(place, Room):
                await place.close()
            else:
                place.let_go()
        self._places.clear()
        await self._background.drain()
