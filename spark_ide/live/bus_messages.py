"""The messages of the bus (``live.bus``), one frozen dataclass per kind: what a replica
forwards to a room's owner, the owner's requests and replies, and the items of the owner's
stream to the room's group, with their conversions from and to what outboxes hold. How each
is laid out on the wire is ``live.bus``'s alone (``encode``/``decode``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .events import Event, Role, TurnDelta, TurnProse
from .focus import AskedRange
from .outbox import DocUpdate, Frame, RawBinary, TextRun
from .turns import CommandKind

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
    checkpoint: str | None = None
    code: bool | None = None
    conversation: bool | None = None
    position: int | None = None
    mentions: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    turns: tuple[str, ...] | None = None
    range: AskedRange | None = None  # prompt, steer: the lines it is about (``live.focus``)
    on: bool | None = None  # edit_steer.switch
    block: int | None = None  # review: which block (None: all those waiting)
    decision: str | None = None  # review: keep or undo

    FIELDS: ClassVar[tuple[str, ...]] = ("text", "effort", "path", "turn", "checkpoint", "decision")
    FLAGS: ClassVar[tuple[str, ...]] = ("code", "conversation", "on")
    NUMBERS: ClassVar[tuple[str, ...]] = ("position", "block")
    LISTS: ClassVar[tuple[str, ...]] = ("mentions", "exclude", "turns")  # lists of strings

    NAMES: ClassVar[tuple[str, ...]] = (*FIELDS, *FLAGS, *NUMBERS, *LISTS, "range")  # what a replica forwards

    def fields(self) -> dict[str, str | bool | int | tuple[str, ...] | AskedRange]:
        return {name: value for name in self.NAMES if (value := getattr(self, name)) is not None}


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
class RoomSettings:
    """The workspace's settings changed (``live.events.WorkspaceSettings``): the owner tells
    every page of the room."""

    changed: Mapping[str, Any]
    by: str


@dataclass(frozen=True, slots=True)
class RoomModel:
    """The workspace's model was switched: the room reads it again (docs/models.md)."""


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


Message = RoomUp | RoomExpel | RoomRejoin | RoomSettings | RoomModel | Request | RoomReply | RoomStream


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
