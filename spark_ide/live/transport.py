"""How a room reaches its participants: a connection per browser tab or script, and the
fan-out over them. In-process today; the team issue puts the channel layer behind the same
protocol, so the room does not change."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .events import Role
from .outbox import Frame, Outbox


@dataclass(eq=False)
class Connection:
    """One participant's socket: who it is, in which session, with which role."""

    id: str
    session: str
    user_id: int | None
    username: str
    role: Role
    outbox: Outbox
    joined_at: int = 0  # the room's seq when it joined the live stream
    hang_up: Callable[[], None] = lambda: None  # closes the socket (the participant was removed)


class Transport(Protocol):
    def add(self, conn: Connection) -> None: ...

    def remove(self, conn: Connection) -> None: ...

    def members(self) -> list[Connection]: ...

    def frame(self, frame: Frame) -> None:
        """Send an event to every member (the frame is encoded once)."""

    def update(self, update: bytes) -> None:
        """Send a (persisted) document update to every member."""

    def raw(self, message: bytes, *, skip: Connection | None = None) -> None:
        """Send a binary message as it is to every member but ``skip`` (awareness)."""


class LocalTransport:
    """Every participant is a connection of this process."""

    def __init__(self) -> None:
        self._members: dict[str, Connection] = {}

    def add(self, conn: Connection) -> None:
        self._members[conn.id] = conn

    def remove(self, conn: Connection) -> None:
        self._members.pop(conn.id, None)

    def members(self) -> list[Connection]:
        return list(self._members.values())

    def frame(self, frame: Frame) -> None:
        for conn in self._members.values():
            conn.outbox.put_frame(frame)

    def update(self, update: bytes) -> None:
        for conn in self._members.values():
            conn.outbox.put_update(update)

    def raw(self, message: bytes, *, skip: Connection | None = None) -> None:
        for conn in self._members.values():
            if conn is not skip:
                conn.outbox.put_raw(message)
