"""What processes that share rooms say to each other over the bus (the Channels layer), typed
(docs/cluster.md): one frozen dataclass per message kind, and ``encode``/``decode``, the one
place that knows how each is laid out on the wire (plain dicts and lists, which msgpack
carries as they are). Nothing else in ``live`` or ``pairing`` builds or reads a bus message.

To a room's owner (its channel): ``RoomUp`` (what a replica's connections send, in order:
``UpItem``), ``RoomExpel``, ``RoomRejoin``, and the requests of HTTP threads (``Request``),
each answered by a ``RoomReply`` on the channel it names. From the owner to the room's
group: ``RoomStream``, its ordered stream (``StreamItem``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .events import Event, Role, TurnDelta, TurnProse
from .outbox import DocUpdate, Frame, RawBinary, TextRun
from .turns import CommandKind

LEASE_TTL_S = 2.5  # an owner that stops renewing loses its rooms this long after
REQUEST_TIMEOUT_S = 5.0


class Bus(Protocol):
    """The part of a Channels layer the cluster uses (``channels.layers.BaseChannelLayer``):
    its messages are the dicts ``encode`` makes."""

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


# -- what a replica forwards (``RoomUp.items``) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoteConn:
    """A connection another process serves, as the owner learns of it at its join."""

    id: str
    session: str
    user_id: int | None
    username: str
    role: Role
    generation: int | None


@dataclass(frozen=True, slots=True)
class Alive:
    """The replica is there (``REPLICA_SILENT_S``)."""


@dataclass(frozen=True, slots=True)
class Join:
    conn: RemoteConn
    after: int | None


@dataclass(frozen=True, slots=True)
class Leave:
    conn: str


@dataclass(frozen=True, slots=True)
class Yjs:
    conn: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Adopt:
    conn: str
    generation: int


@dataclass(frozen=True, slots=True)
class CommandItem:
    """A command for the Pilot, with the fields the connection gave (None: not given)."""

    conn: str
    command: CommandKind
    text: str | None = None
    effort: str | None = None
    path: str | None = None
    turn: str | None = None

    FIELDS: ClassVar[tuple[str, ...]] = ("text", "effort", "path", "turn")

    def fields(self) -> dict[str, str]:
        return {name: value for name in self.FIELDS if (value := getattr(self, name)) is not None}


@dataclass(frozen=True, slots=True)
class Resume:
    conn: str
    after: int


@dataclass(frozen=True, slots=True)
class Run:
    conn: str
    path: str
    tests: bool
    confirm: bool


@dataclass(frozen=True, slots=True)
class RunInput:
    conn: str
    run: str
    text: str


@dataclass(frozen=True, slots=True)
class RunStop:
    conn: str
    run: str


UpItem = Alive | Join | Leave | Yjs | Adopt | CommandItem | Resume | Run | RunInput | RunStop

# -- to the owner's channel ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoomUp:
    replica: str  # the replica's channel
    items: tuple[UpItem, ...]


@dataclass(frozen=True, slots=True)
class RoomExpel:
    user: int


@dataclass(frozen=True, slots=True)
class RoomRejoin:
    pass


@dataclass(frozen=True, slots=True)
class RoomSetFile:
    """A file written (or deleted: ``text`` None); when ``conditional``, only if it still
    holds ``expected`` (None: it does not exist)."""

    path: str
    text: str | None
    conditional: bool = False
    expected: str | None = None
    reply: str = ""


@dataclass(frozen=True, slots=True)
class RoomMoveFile:
    path: str
    new_path: str
    reply: str = ""


@dataclass(frozen=True, slots=True)
class RoomStoreEvents:
    reply: str = ""


@dataclass(frozen=True, slots=True)
class RoomReadFiles:
    reply: str = ""


Request = RoomSetFile | RoomMoveFile | RoomStoreEvents | RoomReadFiles


@dataclass(frozen=True, slots=True)
class RoomReply:
    """The owner's answer to a ``Request``: whether it was done (a conditional write), the
    moved file's text, or every file's."""

    ok: bool = True
    text: str | None = None
    texts: Mapping[str, str] | None = None


# -- the owner's stream to the room's group ------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextItem:
    """A turn's delta (``delta``) or prose; merged runs included."""

    seq: int
    delta: bool
    turn: str
    text: str


@dataclass(frozen=True, slots=True)
class EventItem:
    """Any other event, as the owner encoded it; ``replaces``: a ``document.replaced``."""

    seq: int
    text: str
    replaces: bool = False


@dataclass(frozen=True, slots=True)
class UpdateItem:
    """A persisted document update."""

    data: bytes


@dataclass(frozen=True, slots=True)
class RawItem:
    """A binary message as it is (only addressed to one connection: sync steps)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class AwarenessItem:
    """Awareness for everyone but connection ``skip``."""

    message: bytes
    skip: str


ConnItem = TextItem | EventItem | UpdateItem | RawItem


@dataclass(frozen=True, slots=True)
class Addressed:
    """An item for one connection (its join, its answers)."""

    conn: str
    item: ConnItem


@dataclass(frozen=True, slots=True)
class HangUp:
    """Hang up on that connection (removed from the room)."""

    conn: str


@dataclass(frozen=True, slots=True)
class Unknown:
    """That connection is unknown to the owner: it reconnects."""

    conn: str


@dataclass(frozen=True, slots=True)
class OwnerGone:
    """The owner let go of the room: everyone reconnects."""


StreamItem = TextItem | EventItem | UpdateItem | RawItem | AwarenessItem | Addressed | HangUp | Unknown | OwnerGone


@dataclass(frozen=True, slots=True)
class RoomStream:
    n: int  # numbered: a replica sees a lost one in the next one's number
    items: tuple[StreamItem, ...]


Message = RoomUp | RoomExpel | RoomRejoin | Request | RoomReply | RoomStream


class BadMessage(ValueError):
    """A bus message of no kind we know, or missing what its kind holds."""


# -- stream items from and to what outboxes hold ---------------------------------------------


def conn_item(item: Frame | TextRun | DocUpdate | RawBinary) -> ConnItem:
    """The stream item that carries an outbox's item."""
    if isinstance(item, TextRun):
        return TextItem(item.seq, item.kind is TurnDelta, item.turn, "".join(item.parts))
    if isinstance(item, Frame):
        event = item.event
        if type(event) is TurnDelta or type(event) is TurnProse:
            return TextItem(item.seq, type(event) is TurnDelta, event.turn, event.text)
        return EventItem(item.seq, item.text, replaces=event.parts_documents)
    if isinstance(item, DocUpdate):
        return UpdateItem(item.data)
    return RawItem(item.data)


@dataclass(frozen=True, slots=True)
class Relayed(Event):
    """An event another process encoded: sent on as it is."""

    type: ClassVar[str] = "relayed"
    ephemeral: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class RelayedReplacement(Relayed):
    """A ``document.replaced`` another process encoded: the outboxes here part documents at it."""

    parts_documents: ClassVar[bool] = True


def frame_of(item: TextItem | EventItem) -> Frame:
    """The frame a replica's connections are sent for a stream item."""
    if isinstance(item, TextItem):
        cls = TurnDelta if item.delta else TurnProse
        return Frame(cls(turn=item.turn, text=item.text), item.seq)
    return Frame.encoded(RelayedReplacement() if item.replaces else Relayed(), item.seq, item.text)


# -- the wire ------------------------------------------------------------------------------

# Up items: {"kind": ..., fields}. Stream items are lists, the first element their kind:
#   ["t", seq, "d"|"p", turn, text]   TextItem
#   ["f", seq, text] / ["R", seq, text]   EventItem (R: replaces)
#   ["u", update] / ["r", message]    UpdateItem / RawItem
#   ["a", message, skip]              AwarenessItem
#   ["d", conn, item]                 Addressed
#   ["h", conn] / ["m", conn] / ["x"]   HangUp / Unknown / OwnerGone


def _wire_item(item: StreamItem) -> list[Any]:
    if isinstance(item, TextItem):
        return ["t", item.seq, "d" if item.delta else "p", item.turn, item.text]
    if isinstance(item, EventItem):
        return ["R" if item.replaces else "f", item.seq, item.text]
    if isinstance(item, UpdateItem | RawItem):
        return ["u" if isinstance(item, UpdateItem) else "r", item.data]
    if isinstance(item, AwarenessItem):
        return ["a", item.message, item.skip]
    if isinstance(item, Addressed):
        return ["d", item.conn, _wire_item(item.item)]
    if isinstance(item, HangUp | Unknown):
        return ["h" if isinstance(item, HangUp) else "m", item.conn]
    return ["x"]


def _stream_item(wire: list[Any]) -> StreamItem:
    kind = wire[0]
    if kind == "t":
        return TextItem(int(wire[1]), wire[2] == "d", str(wire[3]), str(wire[4]))
    if kind == "f" or kind == "R":
        return EventItem(int(wire[1]), str(wire[2]), replaces=kind == "R")
    if kind == "u" or kind == "r":
        return UpdateItem(bytes(wire[1])) if kind == "u" else RawItem(bytes(wire[1]))
    if kind == "a":
        return AwarenessItem(bytes(wire[1]), str(wire[2]))
    if kind == "d":
        inner = _stream_item(wire[2])
        if not isinstance(inner, TextItem | EventItem | UpdateItem | RawItem):
            raise BadMessage(f"an addressed stream item of kind {wire[2][0]!r}")
        return Addressed(str(wire[1]), inner)
    if kind == "h" or kind == "m":
        return HangUp(str(wire[1])) if kind == "h" else Unknown(str(wire[1]))
    if kind == "x":
        return OwnerGone()
    raise BadMessage(f"a stream item of kind {kind!r}")


def _wire_up(item: UpItem) -> dict[str, Any]:
    if isinstance(item, Alive):
        return {"kind": "alive"}
    if isinstance(item, Join):
        conn = item.conn
        described = {"id": conn.id, "session": conn.session, "user_id": conn.user_id, "username": conn.username,
                     "role": conn.role.value, "generation": conn.generation}
        return {"kind": "join", "conn": described, "after": item.after}
    if isinstance(item, CommandItem):
        return {"kind": "command", "conn": item.conn, "command": item.command.value, **item.fields()}
    kind = _UP_KINDS[type(item)]
    return {"kind": kind, **{field.name: getattr(item, field.name) for field in dataclasses.fields(item)}}


def _up_item(wire: Mapping[str, Any]) -> UpItem:
    kind = wire["kind"]
    if kind == "alive":
        return Alive()
    if kind == "join":
        d = wire["conn"]
        conn = RemoteConn(
            id=str(d["id"]), session=str(d["session"]), user_id=None if d["user_id"] is None else int(d["user_id"]),
            username=str(d["username"]), role=Role(d["role"]),
            generation=None if d.get("generation") is None else int(d["generation"]),
        )
        return Join(conn, None if wire["after"] is None else int(wire["after"]))
    if kind == "command":
        fields = {name: str(wire[name]) for name in CommandItem.FIELDS if name in wire}
        return CommandItem(conn=str(wire["conn"]), command=CommandKind(wire["command"]), **fields)
    of = str(wire["conn"])
    if kind == "leave":
        return Leave(of)
    if kind == "yjs":
        return Yjs(of, bytes(wire["data"]))
    if kind == "adopt":
        return Adopt(of, int(wire["generation"]))
    if kind == "resume":
        return Resume(of, int(wire["after"]))
    if kind == "run":
        return Run(of, str(wire["path"]), bool(wire["tests"]), bool(wire.get("confirm")))
    if kind == "run.input":
        return RunInput(of, str(wire["run"]), str(wire["text"]))
    if kind == "run.stop":
        return RunStop(of, str(wire["run"]))
    raise BadMessage(f"an item of kind {kind!r}")


_UP_KINDS: dict[type, str] = {
    Leave: "leave", Yjs: "yjs", Adopt: "adopt", Resume: "resume",
    Run: "run", RunInput: "run.input", RunStop: "run.stop",
}


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def encode(message: Message) -> dict[str, Any]:
    """``message`` as the bus carries it."""
    if isinstance(message, RoomStream):
        return {"type": "room.stream", "n": message.n, "items": [_wire_item(item) for item in message.items]}
    if isinstance(message, RoomUp):
        return {"type": "room.up", "replica": message.replica, "items": [_wire_up(item) for item in message.items]}
    if isinstance(message, RoomExpel):
        return {"type": "room.expel", "user": message.user}
    if isinstance(message, RoomRejoin):
        return {"type": "room.rejoin"}
    if isinstance(message, RoomSetFile):
        wire: dict[str, Any] = {"type": "room.set_file", "path": message.path, "text": message.text,
                                "reply": message.reply}
        if message.conditional:  # only if the file still holds what the asker read
            wire["expected"] = message.expected
        return wire
    if isinstance(message, RoomMoveFile):
        return {"type": "room.move_file", "path": message.path, "new_path": message.new_path, "reply": message.reply}
    if isinstance(message, RoomStoreEvents | RoomReadFiles):
        kind = "room.store_events" if isinstance(message, RoomStoreEvents) else "room.read_files"
        return {"type": kind, "reply": message.reply}
    answer: dict[str, Any] = {"type": "room.reply", "ok": message.ok}
    if message.text is not None:
        answer["text"] = message.text
    if message.texts is not None:
        answer["texts"] = dict(message.texts)
    return answer


def decode(wire: Mapping[str, Any]) -> Message:
    """A bus message back from what the bus carried (``BadMessage``: not one of ours)."""
    try:
        return _DECODERS[wire["type"]](wire)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise BadMessage(f"a bus message {str(wire.get('type'))[:40]!r}: {exc!r}") from exc


def _reply_of(wire: Mapping[str, Any]) -> RoomReply:
    texts = wire.get("texts")
    return RoomReply(
        ok=bool(wire.get("ok", True)), text=_optional_text(wire.get("text")),
        texts=None if texts is None else {str(path): str(text) for path, text in texts.items()},
    )


_DECODERS: dict[str, Callable[[Mapping[str, Any]], Message]] = {
    "room.stream": lambda w: RoomStream(int(w["n"]), tuple(_stream_item(item) for item in w["items"])),
    "room.up": lambda w: RoomUp(str(w["replica"]), tuple(_up_item(item) for item in w["items"])),
    "room.expel": lambda w: RoomExpel(int(w["user"])),
    "room.rejoin": lambda w: RoomRejoin(),
    "room.set_file": lambda w: RoomSetFile(
        str(w["path"]), _optional_text(w["text"]), conditional="expected" in w,
        expected=_optional_text(w.get("expected")), reply=str(w["reply"]),
    ),
    "room.move_file": lambda w: RoomMoveFile(str(w["path"]), str(w["new_path"]), reply=str(w["reply"])),
    "room.store_events": lambda w: RoomStoreEvents(reply=str(w["reply"])),
    "room.read_files": lambda w: RoomReadFiles(reply=str(w["reply"])),
    "room.reply": _reply_of,
}


# -- sending and asking ----------------------------------------------------------------------


async def send(bus: Bus, channel: str, message: Message) -> None:
    await bus.send(channel, encode(message))


async def ask_owner(bus: Bus, owner: str, request: Request) -> RoomReply:
    """A request to a room's owner that waits for its answer (HTTP reads and writes)."""
    reply = await bus.new_channel()
    await bus.send(owner, encode(dataclasses.replace(request, reply=reply)))
    answer = decode(await asyncio.wait_for(bus.receive(reply), REQUEST_TIMEOUT_S))
    if not isinstance(answer, RoomReply):
        raise BadMessage(f"the owner answered a {type(request).__name__} with a {type(answer).__name__}")
    return answer
