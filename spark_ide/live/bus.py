"""What processes that share rooms say to each other over the bus (the Channels layer), typed
(docs/cluster.md): one frozen dataclass per message kind (``live.bus_messages``), and
``encode``/``decode`` here, the one place that knows how each is laid out on the wire
(plain dicts and lists, which msgpack carries as they are). Nothing else in ``live`` or
``pairing`` builds or reads a bus message.

To a room's owner (its channel): ``RoomUp`` (what a replica's connections send, in order:
``UpItem``), ``RoomExpel``, ``RoomRejoin``, ``RoomSettings``, ``RoomModel``, and the requests
of HTTP threads (``Request``), each answered by a ``RoomReply`` on the channel it names. From the owner to the room's
group: ``RoomStream``, its ordered stream (``StreamItem``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .bus_messages import (
    Addressed,
    Adopt,
    Alive,
    AwarenessItem,
    BadMessage,
    CommandItem,
    EventItem,
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
    RoomModel,
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
    TextItem,
    Unknown,
    UpdateItem,
    UpItem,
    Yjs,
)
from .events import Role
from .focus import AskedRange
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
        listed: dict[str, object] = {
            name: list(value) if isinstance(value, tuple) else value for name, value in item.fields().items()
        }
        if item.range is not None:
            listed["range"] = [item.range.path, item.range.from_line, item.range.to_line, item.range.cursor]
        return {"kind": "command", "conn": item.conn, "command": item.command.value, **listed}
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
        fields: dict[str, Any] = {name: str(wire[name]) for name in CommandItem.FIELDS if name in wire}
        fields.update({name: bool(wire[name]) for name in CommandItem.FLAGS if name in wire})
        if "range" in wire:
            path, first, last, cursor = wire["range"]
            fields["range"] = AskedRange(str(path), int(first), int(last), bool(cursor))
        fields.update({name: int(wire[name]) for name in CommandItem.NUMBERS if name in wire})
        fields.update({name: tuple(str(item) for item in wire[name]) for name in CommandItem.LISTS if name in wire})
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


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"not a mapping: {type(value).__name__}")
    return {str(key): item for key, item in value.items()}


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
    if isinstance(message, RoomSettings):
        return {"type": "room.settings", "changed": dict(message.changed), "by": message.by}
    if isinstance(message, RoomModel):
        return {"type": "room.model"}
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
    "room.settings": lambda w: RoomSettings(_mapping(w["changed"]), str(w["by"])),
    "room.model": lambda w: RoomModel(),
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
