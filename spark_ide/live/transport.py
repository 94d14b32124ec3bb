"""How a room reaches its participants: a connection per browser tab or script, and the
fan-out over them. In one process ``LocalTransport``; across processes ``live.owner.ClusterTransport``
(the channel layer behind the same protocol: the room does not change). And ``Place``, what a
connection takes part in: the room itself, or (``live.replica``) a replica of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .events import ErrorEvent, Event, Role
from .outbox import Frame
from .turns import CommandKind


class Sink(Protocol):
    """Where a connection's messages go: its ``Outbox``, or (for a connection another
    process serves) the room's shared stream (``live.owner.RemoteSink``)."""

    def put_frame(self, frame: Frame) -> None: ...

    def put_update(self, update: bytes) -> None: ...

    def put_raw(self, message: bytes) -> None: ...


@dataclass(eq=False)
class Connection:
    """One participant's socket: who it is, in which session, with which role."""

    id: str
    session: str
    user_id: int | None
    username: str
    role: Role
    outbox: Sink
    joined_at: int = 0  # the room's seq when it joined the live stream
    hang_up: Callable[[], None] = lambda: None  # closes the socket (the participant was removed)
    move: Callable[[], None] = lambda: None  # closes it so that it reconnects (the room moved)
    remote: str = ""  # the channel of the process that serves it, when that is not the room's
    asked_at: float = float("-inf")  # when the room last asked it for updates it may lack (``doc_rules.YjsIntake``)
    # The document generation its page holds: None until it joins knowing none (``?generation=``),
    # then the room's; behind the room's until the page says it adopted the new one.
    generation: int | None = None


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


class RoomClosed(Exception):
    """The room (or the replica) closed while a connection was joining it: join the next one."""


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

    def settings_changed(self, changed: Mapping[str, Any], by: str) -> None:
        """The workspace's settings changed (``WorkspaceSettings``): every page is told;
        callable from any thread."""

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None: ...

    def run_input(self, conn: Connection, run: str, text: str) -> None: ...

    def run_stop(self, conn: Connection, run: str) -> None: ...
