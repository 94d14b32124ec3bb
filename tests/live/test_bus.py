"""The bus messages (``live.bus``): every kind goes through ``encode`` and comes back equal
from ``decode``, as the wire carries it (msgpack: lists and dicts of plain values); what is
not one of ours is refused with ``BadMessage``."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import pytest

from spark_ide.live.bus import decode, encode
from spark_ide.live.bus_messages import (
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
    TextItem,
    Unknown,
    UpdateItem,
    Yjs,
    conn_item,
    frame_of,
)
from spark_ide.live.events import DocumentReplaced, Role, TurnDelta, TurnProse
from spark_ide.live.focus import AskedRange
from spark_ide.live.outbox import DocUpdate, Frame, RawBinary, TextRun
from spark_ide.live.turns import Command, CommandKind

CONN = RemoteConn(id="c1", session="s", user_id=7, username="ada", role=Role.COLLABORATOR, generation=None)

MESSAGES: list[Message] = [
    RoomUp("replica-1", (
        Alive(), Join(CONN, None), Join(RemoteConn("c2", "s", None, "guest", Role.VIEWER, 3), 42), Leave("c1"),
        Yjs("c1", b"\x00\x02\x01"), Adopt("c1", 2), CommandItem("c1", CommandKind.STOP),
        CommandItem("c1", CommandKind.PROMPT, text="hi", effort="low", path="a.py"),
        CommandItem("c1", CommandKind.PROMPT, text="hi", path="a.py", range=AskedRange("a.py", 3, 5)),
        CommandItem("c1", CommandKind.STEER, text="this", range=AskedRange("a.py", 7, 7, cursor=True)),
        CommandItem("c1", CommandKind.REVERT, turn="t1"),
        CommandItem("c1", CommandKind.CHECKPOINT_RESTORE, checkpoint="cp1", code=True, conversation=False),
        CommandItem("c1", CommandKind.CHECKPOINT_CREATE, text="before refactor"),
        CommandItem("c1", CommandKind.REVIEW, turn="t1", block=3, decision="undo"),
        CommandItem("c1", CommandKind.REVIEW, turn="t1", decision="keep"),
        CommandItem("c1", CommandKind.PROMPT, text="hi", mentions=("a.py", "b.py:f"), exclude=("c.md",)),
        CommandItem("c1", CommandKind.QUEUE_MOVE, turn="t2", position=3),
        CommandItem("c1", CommandKind.QUEUE_MERGE, turns=("t2", "t3")),
        CommandItem("c1", CommandKind.EDIT_STEER_SWITCH, on=False),
        CommandItem("c1", CommandKind.EDIT_STEER_COMMIT, text="key"),
        Resume("c1", 9), Run("c1", "a.py", False, True),
        RunInput("c1", "r1", "input\n"), RunStop("c1", "r1"),
    )),
    RoomExpel(7),
    RoomRejoin(),
    RoomSettings({"auto_test": None}, "ada"),
    RoomSettings({"auto_test": True, "model": "gpt-5"}, "ada"),
    RoomModel(),
    RoomSetFile("a.py", "x = 1\n", reply="r"),
    RoomSetFile("a.py", None, reply="r"),
    RoomSetFile("a.py", "y\n", conditional=True, expected=None, reply="r"),
    RoomSetFile("a.py", "y\n", conditional=True, expected="x\n", reply="r"),
    RoomMoveFile("a.py", "b.py", reply="r"),
    RoomStoreEvents(reply="r"),
    RoomReadFiles(reply="r"),
    RoomReply(),
    RoomReply(ok=False),
    RoomReply(text="moved\n"),
    RoomReply(texts={"a.py": "x\n", "b/c.py": ""}),
    RoomStream(3, (
        TextItem(5, True, "t1", "def "), TextItem(6, False, "t1", "Hello"), EventItem(7, '{"type":"x"}'),
        EventItem(8, '{"type":"document.replaced"}', replaces=True), UpdateItem(b"\x01\x02"),
        AwarenessItem(b"\x01aw", "c1"), AwarenessItem(b"\x01aw", ""), Addressed("c1", RawItem(b"\x00\x00")),
        Addressed("c2", TextItem(9, True, "t1", "x")), Addressed("c2", UpdateItem(b"u")), HangUp("c1"),
        Unknown("c2"), OwnerGone(),
    )),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_comes_back_as_it_went(message: Message) -> None:
    carried: Any = msgpack.unpackb(msgpack.packb(encode(message), use_bin_type=True), raw=False)
    assert decode(carried) == message


def test_every_field_a_person_gives_a_command_crosses_the_bus() -> None:
    # What the owner fills in itself (who asked, when, how to answer) or makes itself (the
    # watchdog's correction, a steer by editing's note) does not come from a page.
    own = {"kind", "session", "user_id", "author", "received_at", "reply", "correction", "note"}
    given = {field.name for field in dataclasses.fields(Command)} - own
    assert given <= set(CommandItem.NAMES), given - set(CommandItem.NAMES)


def test_every_room_kind_is_spelt_as_on_the_wire() -> None:
    kinds = {encode(message)["type"] for message in MESSAGES}
    assert kinds == {
        "room.up", "room.expel", "room.rejoin", "room.settings", "room.model", "room.set_file", "room.move_file",
        "room.store_events",
        "room.read_files", "room.reply", "room.stream",
    }


@pytest.mark.parametrize("wire", [
    {"type": "room.nothing"}, {"type": "room.expel"}, {"type": "room.settings", "changed": [1], "by": "ada"},
    {"type": "room.up", "replica": "r", "items": [{"kind": "x"}]},
    {"type": "room.stream", "n": 1, "items": [["z"]]}, {"type": "room.stream", "n": 1, "items": [["d", "c", ["x"]]]},
    {"type": "room.up", "replica": "r", "items": [{"kind": "command", "conn": "c", "command": "dance"}]},
])
def test_what_is_not_ours_is_refused(wire: dict[str, Any]) -> None:
    with pytest.raises(BadMessage):
        decode(wire)


def test_outbox_items_become_stream_items_and_frames_again() -> None:
    delta = Frame(TurnDelta(turn="t", text="abc"), 4)
    run = TextRun(kind=TurnProse, turn="t", first_seq=5, seq=6, parts=["He", "llo"])
    replaced = Frame(DocumentReplaced(generation=2, state="AA=="), 7)
    assert conn_item(delta) == TextItem(4, True, "t", "abc")
    assert conn_item(run) == TextItem(6, False, "t", "Hello")
    assert conn_item(DocUpdate(b"u")) == UpdateItem(b"u") and conn_item(RawBinary(b"r")) == RawItem(b"r")
    item = conn_item(replaced)
    assert isinstance(item, EventItem) and item.replaces
    again = frame_of(item)
    assert again.text == replaced.text and again.seq == 7 and again.event.parts_documents
    back = frame_of(TextItem(4, True, "t", "abc"))
    assert back.event == TurnDelta(turn="t", text="abc") and back.text == delta.text
