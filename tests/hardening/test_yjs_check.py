"""The bounded walk of Yjs frames (``live.yjs_check``): crafted lengths are refused before
pycrdt sees them, and real updates (pycrdt's and the browser's yjs) pass. What the walk costs
per keystroke frame is a benchmark figure (``spark_bench editing``, docs/benchmarks.md)."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycrdt import Array, Doc, Map, Text, create_sync_message, handle_sync_message

from spark_ide.live.doc_rules import BAD_FRAMES, malformed_yjs
from spark_ide.live.yjs_check import MAX_DEPTH, BadFrames, BadUpdate, _Reader, _walk_update, check_sync
from tests.support.node import run_node

HUGE = 3_400_000_000  # the 3.4 GB field of issue 16


def varuint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        if not number:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def string(text: bytes) -> bytes:
    return varuint(len(text)) + text


def update_message(update: bytes) -> bytes:
    """A y-protocols sync update frame around ``update`` (what a client sends)."""
    return b"\x00\x02" + varuint(len(update)) + update


def one_struct(info: int, body: bytes) -> bytes:
    """An update with one client, one struct at the root map "files" (no origins)."""
    return b"\x01\x01" + varuint(7) + b"\x00" + bytes([info]) + b"\x01" + string(b"files") + body + b"\x00"


CRAFTED = {
    "huge string length": one_struct(0x04, varuint(HUGE) + b"abc"),
    "huge binary length": one_struct(0x03, varuint(HUGE) + b"\x01\x02"),
    "huge map key length": one_struct(0x24, varuint(HUGE) + b"k"),
    "huge struct count": b"\x01" + varuint(HUGE) + varuint(7) + b"\x00" + b"\x04\x01" + string(b"files") + b"\x00",
    "huge client count": varuint(HUGE) + b"\x00",
    "huge list of values": one_struct(0x08, varuint(HUGE) + b"\x7e"),
    "huge list of JSON values": one_struct(0x02, varuint(HUGE) + b"\x00"),
    "huge object size": one_struct(0x08, b"\x01\x76" + varuint(HUGE) + b"\x01k\x7e"),
    "huge array in a value": one_struct(0x08, b"\x01\x75" + varuint(HUGE) + b"\x7e"),
    "huge delete set": b"\x00" + varuint(HUGE) + b"\x01\x01",
    "huge deleted ranges": b"\x00\x01" + varuint(7) + varuint(HUGE) + b"\x00\x01",
    "truncated varint": b"\x01\x01" + b"\xff\xff\xff",
    "varint over 10 bytes": b"\x01" + b"\xff" * 12 + b"\x01",
    "truncated string": one_struct(0x04, b"\x05abc")[:-1],
    "nesting too deep": one_struct(0x08, b"\x01" + b"\x75\x01" * (MAX_DEPTH + 2) + b"\x7e"),
    "unknown value tag": one_struct(0x08, b"\x01\x50"),
    "unknown content kind": one_struct(0x0B, b"\x00"),
    "unknown shared type": one_struct(0x07, b"\x09"),
    "ends before the delete set": one_struct(0x04, string(b"hi"))[:-1],
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_crafted_lengths_are_refused_before_pycrdt(name: str) -> None:
    frame = update_message(CRAFTED[name])
    with pytest.raises(BadUpdate):
        check_sync(frame)
    before = BAD_FRAMES.total
    error = malformed_yjs(frame, "mallory")
    assert error is not None and error.code == "malformed_binary"
    assert BAD_FRAMES.total == before + 1


def test_frames_around_the_update_are_checked_too() -> None:
    good: Doc[Any] = Doc()
    good.get("files", type=Map)["a.py"] = Text("x")
    assert malformed_yjs(create_sync_message(good)) is None  # step 1: a state vector
    assert malformed_yjs(b"\x01\x06\x01\x05\x01\x02{}") is None  # awareness: one client's state "{}"
    assert malformed_yjs(b"\x00\x01\x00") is None  # an empty step 2: nothing new
    refused = [
        b"", b"\x07", b"\x00", b"\x00\x03\x00",  # no frame, unknown type, no sub-type, unknown sub-type
        b"\x00\x02" + varuint(HUGE) + b"\x00\x00",  # the update's own length prefix
        b"\x00\x00" + varuint(5) + varuint(HUGE) + b"\x01\x01\x01",  # a state vector claiming billions
        b"\x01\x03abc",  # awareness claiming 97 clients in 2 bytes
        b"\x01\x06\x01\x05\x01" + varuint(HUGE) + b"{}",  # a state longer than the frame
    ]
    for frame in refused:
        assert malformed_yjs(frame) is not None, frame


def walks_exactly(update: bytes) -> bool:
    reader = _Reader(update)
    _walk_update(reader)
    return reader.pos == len(update)


def assert_accepted(update: bytes) -> None:
    """A real update passes, its walk ends exactly at its last byte (so a cut is noticed),
    and pycrdt applies it."""
    check_sync(update_message(update))
    assert walks_exactly(update)
    handle_sync_message(update_message(update)[1:], Doc())


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
# Indexes into a Y.Text count differently from Python for characters past the BMP: typed
# text is ASCII, whole texts and values take any character.
typed = st.text(st.characters(codec="ascii"), max_size=12)
operations = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "file", "remove", "array", "map"]),
              st.integers(0, 50), st.text(max_size=12), values, typed),
    min_size=1, max_size=25,
)


def random_document(ops: list[tuple[str, int, str, Any, str]]) -> tuple[Doc[Any], list[bytes]]:
    """A document of files (Y.Text) and nested values changed by ``ops``, and the update of
    each change, as the room's observer sees them."""
    doc: Doc[Any] = Doc()
    files = doc.get("files", type=Map)
    array = doc.get("array", type=Array)
    updates: list[bytes] = []
    doc.observe(lambda event: updates.append(bytes(event.update)))
    files["main.py"] = Text("print('hi')\n")  # ASCII: indexes are characters
    for kind, number, text, value, ascii_text in ops:
        paths = sorted(files.keys())
        with doc.transaction():
            if kind == "insert" and paths:
                target = files[paths[number % len(paths)]]
                target.insert(number % (len(target) + 1), ascii_text)
            elif kind == "delete" and paths:
                target = files[paths[number % len(paths)]]
                if len(target):
                    start = number % len(target)
                    del target[start:min(len(target), start + 1 + number % 5)]
            elif kind == "file":
                files[f"{text[:6]}{number}.py"] = Text(ascii_text)
            elif kind == "remove" and paths:
                del files[paths[number % len(paths)]]
            elif kind == "array":
                array.append(value)
            elif kind == "map":
                array.append(Map({"k": value, "t": Text(text)}))
    return doc, updates


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, cut=st.integers(0, 10_000))
def test_real_updates_of_random_documents_pass_and_any_cut_is_refused(ops: Any, cut: int) -> None:
    doc, updates = random_document(ops)
    whole = doc.get_update()
    for update in [*updates, whole]:
        assert_accepted(update)
    check_sync(create_sync_message(doc))
    short = whole[: 1 + cut % (len(whole) - 1)]  # empty is "nothing new", accepted
    with pytest.raises(BadUpdate):
        check_sync(update_message(short))


BROWSER_UPDATES = """
import * as Y from "yjs";
import * as encoding from "lib0/encoding";
import { Awareness, encodeAwarenessUpdate } from "y-protocols/awareness";
const doc = new Y.Doc();
const updates = [];
doc.on("update", (update) => updates.push(Buffer.from(update).toString("hex")));
const files = doc.getMap("files");
const text = new Y.Text("héllo 🌍\\n");
files.set("a.py", text);
text.insert(3, "xyz"); text.delete(1, 2); text.format(0, 2, {bold: true}); text.insertEmbed(1, {img: "x"});
for (let i = 0; i < 20; i++) text.insert(i % 7, "k");
files.delete("a.py"); files.set("b.py", new Y.Text("b"));
doc.getArray("values").push([1, 2.5, "s", null, true, {a: [1, {b: 2}]}, new Uint8Array([1, 2])]);
const element = new Y.XmlElement("p");
doc.getXmlFragment("xml").push([element]);
element.setAttribute("k", "v"); element.push([new Y.XmlText("hi")]);
const map = doc.getMap("map"); map.set("sub", new Y.Doc()); map.set("n", 2n ** 40n);
updates.push(Buffer.from(Y.encodeStateAsUpdate(doc)).toString("hex"));
const awareness = new Awareness(doc);
awareness.setLocalStateField("user", {name: "ädä", color: "#30bced"});
awareness.setLocalStateField("cursor", {anchor: {type: null, tname: "files", item: null, assoc: 0}, head: null});
const framed = encoding.createEncoder();
encoding.writeVarUint(framed, 1);
encoding.writeVarUint8Array(framed, encodeAwarenessUpdate(awareness, [doc.clientID]));
awareness.destroy();  // its timer would keep node running
console.log(JSON.stringify({updates, awareness: Buffer.from(encoding.toUint8Array(framed)).toString("hex")}));
"""


def test_the_browsers_yjs_updates_pass() -> None:
    result = run_node(BROWSER_UPDATES)
    updates = [bytes.fromhex(hexed) for hexed in result["updates"]]
    assert len(updates) > 25
    for update in updates:
        assert_accepted(update)
    assert malformed_yjs(bytes.fromhex(result["awareness"])) is None


def flips(data: bytes, positions: list[int], bits: list[int]) -> bytes:
    out = bytearray(data)
    for position, bit in zip(positions, bits, strict=False):
        out[position % len(out)] ^= 1 << bit
    return bytes(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=operations, positions=st.lists(st.integers(0, 10_000), min_size=1, max_size=3),
    bits=st.lists(st.integers(0, 7), min_size=3, max_size=3), claim=st.integers(0, 2**35),
)
def test_mutated_updates_are_refused_or_decoded_within_bounds(
    ops: Any, positions: list[int], bits: list[int], claim: int
) -> None:
    """Bit flips and a rewritten length byte: whatever passes the walk, pycrdt decodes or
    refuses with a ValueError (the room's expected refusal), never worse."""
    _, updates = random_document(ops)
    update = updates[-1]
    mutated = [flips(update, positions, bits)]
    at = positions[0] % len(update)
    mutated.append(update[:at] + varuint(claim) + update[at + 1:])
    for candidate in mutated:
        frame = update_message(candidate)
        try:
            check_sync(frame)
        except BadUpdate:
            continue
        with contextlib.suppress(ValueError):  # pycrdt's refusal; a panic or any other error fails
            handle_sync_message(frame[1:], Doc())


def test_bad_frames_are_one_warning_line_now_and_then(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.hardening.frames")
    frames = BadFrames(logger, every_s=0.2)
    with caplog.at_level(logging.WARNING, logger=logger.name):
        for _ in range(1000):
            frames.note("mallory", "a string at byte 9 claims 3400000000 bytes")
        time.sleep(0.25)
        frames.note("mallory", "the last one")
    lines = [record for record in caplog.records if record.name == logger.name]
    assert frames.total == 1001
    assert len(lines) == 2
    assert not any(record.exc_info for record in lines)
    assert "1 bad Yjs frame(s)" in lines[0].getMessage()
    assert "refused 1000 bad Yjs frame(s)" in lines[1].getMessage()  # the 999 unlogged, and this one


def test_an_update_with_a_gap_in_a_clients_changes_is_refused() -> None:
    """pycrdt integrates such structs without telling the update observer: the room's
    document and its peers' copies would part (the fuzz test found it)."""
    doc: Doc[Any] = Doc()
    files = doc.get("files", type=Map)
    files["a.py"] = Text("abc")
    server: Doc[Any] = Doc()
    server.apply_update(doc.get_update())  # holds the file, not the keystrokes below
    keystrokes: list[bytes] = []
    doc.observe(lambda event: keystrokes.append(bytes(event.update)))
    for letter in "xyz":
        files["a.py"].insert(0, letter)
    check_sync(update_message(keystrokes[0]), state=server.get_state)  # the next in order: accepted
    with pytest.raises(BadUpdate, match="depend on changes"):
        check_sync(update_message(keystrokes[2]), state=server.get_state)  # x and y never came
    server.apply_update(keystrokes[0])
    server.apply_update(keystrokes[1])
    check_sync(update_message(keystrokes[2]), state=server.get_state)
