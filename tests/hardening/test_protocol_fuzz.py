"""A hostile client against a live room (issue 16): thousands of random and mutated frames
through the real consumer, while a well-behaved client in the same room keeps typing.

The server must never crash (no close: a 1011 would show here), every bad frame must get
its ``error`` (the code the registry and docs/pairing.md promise, naming the field), the
log must not grow a traceback per frame, and the good client's document must stay intact
and converge with what a newcomer gets.

One room serves every hypothesis example (a batch of frames each): opening a room per
example would cost more than the frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from dataclasses import dataclass, replace
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connections
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as fuzzing
from hypothesis import strategies as st
from pycrdt import Doc, Map, Text, create_update_message, handle_sync_message

from spark_ide.accounts.services import api_token_create
from spark_ide.live.doc_rules import BAD_FRAMES
from spark_ide.live.events import Role
from spark_ide.live.messages import MESSAGES, Field, Limits, MessageSpec
from spark_ide.live.yjs_check import check_awareness, check_sync
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.consumer import SessionConsumer
from spark_ide.pairing.models import Participant
from tests.pairing.conftest import Live, LiveClient, connect

pytestmark = [pytest.mark.django_db(transaction=True)]

CAP = 32 * 1024  # SPARK_WS_MAX_MESSAGE_BYTES for the test: oversized frames stay cheap
EXAMPLES = int(os.environ.get("SPARK_FUZZ_EXAMPLES", "55"))  # batches of 40 to 100 frames
RULES = {"bad_path", "path_conflict", "too_many_files"}  # answers to a collaborator's accepted write
LATER = "decided when sent"  # a binary frame's answer depends on the document at that moment


@dataclass(frozen=True)
class Shot:
    """One frame from one of the hostile sockets, and the error code it must get (None: no
    error, as for a valid ping) and the field the error must name."""

    who: str  # "mallory" (collaborator) or "vic" (viewer)
    frame: str | bytes
    expect: str | None
    field: str | None = None
    pong: bool = False  # a valid ping: answered by pong

    def __repr__(self) -> str:  # a failing batch is printed: keep huge frames short
        return f"Shot({self.who}, {self.frame[:160]!r}, expect={self.expect}, field={self.field})"


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)


def valid_value(spec_field: Field) -> Any:
    if spec_field.choices is not None:
        return spec_field.choices[0]
    if str in spec_field.kinds:
        return "app.py"
    if bool in spec_field.kinds:
        return False
    if dict in spec_field.kinds:  # a prompt's range (the only object field)
        return {"path": "app.py", "from_line": 1, "to_line": 2}
    if list in spec_field.kinds:
        return []  # (a required list, queue.merge's turns, is the only field of its message)
    return spec_field.minimum or 0


def of_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


@st.composite
def bad_field(draw: st.DrawFn, limits: Limits) -> Shot:
    """A message of a registered type with every field right but one."""
    spec: MessageSpec = draw(st.sampled_from(list(MESSAGES.values())))
    message: dict[str, Any] = {"type": spec.type} | {f.name: valid_value(f) for f in spec.fields}
    who = draw(st.sampled_from(["mallory", "vic"]))
    if not spec.fields:  # nothing to spoil: junk beside the type is ignored
        message["junk"] = draw(junk)
        expect = None if Role.VIEWER in spec.roles or who == "mallory" else "forbidden"
        return Shot(who, json.dumps(message), expect)
    target: Field = draw(st.sampled_from(spec.fields))
    required = target.required or target.required_unless is not None  # the base has tests: false
    ways = ["wrong type", "out of range"]
    if required:
        ways += ["absent", "null"]
    if str in target.kinds and required and not target.blank:
        ways.append("blank")
    if target.limit is not None and str in target.kinds:
        ways.append("too long")
    way = draw(st.sampled_from(ways))
    if way == "wrong type":
        value = draw(junk.filter(lambda v: v is not None and not of_kind(v, target.kinds)))
        message[target.name] = value
        code = "missing_field" if required else "bad_field"
    elif way in ("absent", "null"):
        if way == "absent":
            del message[target.name]
        else:
            message[target.name] = None
        code = "missing_field"
    elif way == "blank":
        message[target.name] = draw(st.sampled_from(["", " ", "\t\n  "]))
        code = "missing_field"
    elif way == "too long":
        assert target.limit is not None
        message[target.name] = "x" * (getattr(limits, target.limit) + draw(st.integers(1, 50)))
        code = "too_long"
    elif target.choices is not None:
        message[target.name] = draw(st.text(max_size=10).filter(lambda v: v not in (target.choices or ())))
        code = "bad_field"
    elif list in target.kinds and target.maximum is not None:  # a list of strings: one item too many
        message[target.name] = [f"f{index}.py" for index in range(target.maximum + 1)]
        code = "too_long"
    elif int in target.kinds and target.maximum is not None:
        low, high = target.minimum or 0, target.maximum
        message[target.name] = draw(st.integers(max_value=low - 1) | st.integers(min_value=high + 1)
                                    | st.sampled_from([10**400, -(10**400), high + 1]))
        code = "bad_field"
    else:  # a string, list or bool field without choices has no range: spoil its type instead
        wrong = st.integers() if list in target.kinds else st.lists(st.integers(), max_size=3)
        message[target.name] = draw(wrong)
        code = "missing_field" if required else "bad_field"
    if who == "vic" and Role.VIEWER not in spec.roles:
        return Shot(who, json.dumps(message), "forbidden")
    return Shot(who, json.dumps(message), code, target.name)


NEAR_MISSES = ["run_input", "run_stop", "Prompt", "prompt ", "run.input\x00", "", "PING", "__class__", "_on_ping"]


@st.composite
def bad_shape(draw: st.DrawFn) -> Shot:
    """Not a message at all: broken JSON, JSON that is not an object with a string type, an
    unknown type, a frame over the size cap, or numbers past what the parser takes."""
    who = draw(st.sampled_from(["mallory", "vic"]))
    kind = draw(st.sampled_from(["unknown", "shape", "broken", "deep", "digits", "oversized", "ping"]))
    if kind == "unknown":
        name = draw(st.sampled_from(NEAR_MISSES) | st.text(max_size=30).filter(lambda t: t not in MESSAGES))
        extra = draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k != "type"), junk, max_size=3))
        return Shot(who, json.dumps({"type": name, **extra}), "unknown_type")
    if kind == "shape":
        value = draw(junk.filter(lambda v: not isinstance(v, dict)) | st.dictionaries(
            st.sampled_from(["type", "text", "id"]), junk, max_size=3
        ).filter(lambda d: not isinstance(d.get("type"), str)))
        return Shot(who, json.dumps(value), "bad_message")
    if kind == "broken":
        valid = json.dumps({"type": "prompt", "text": draw(st.text(max_size=20))})
        text = draw(st.text(min_size=1, max_size=40) | st.just(valid[: draw(st.integers(1, len(valid) - 1))]))
        try:
            json.loads(text)
        except ValueError:
            return Shot(who, text, "malformed_json")
        return Shot(who, "{" + text, "malformed_json")
    if kind == "deep":  # deeper than the JSON parser's stack: it raises RecursionError
        depth = draw(st.integers(3000, 10_000))
        return Shot(who, '{"type": "prompt", "text": ' + "[" * depth + "]" * depth + "}", "malformed_json")
    if kind == "digits":  # past Python's 4,300 digits an integer does not parse
        return Shot(who, '{"type": "resume", "after": ' + "7" * draw(st.integers(4301, 6000)) + "}", "malformed_json")
    if kind == "oversized":
        return Shot(who, json.dumps({"type": "ping", "id": "x" * (CAP + draw(st.integers(1, 100)))}), "too_large")
    extra = draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("type", "id")), junk, max_size=3))
    ping = {"type": "ping", "id": draw(st.integers(-(2**53) + 1, 2**53 - 1)), **extra}
    return Shot(who, json.dumps(ping), None, pong=True)


def expected_for_binary(frame: bytes, mirror: Doc[Any]) -> str | None:
    """What the room answers a collaborator's binary frame, found by doing what the room does
    to ``mirror``, a copy of the room's document that takes the same frames in the same order
    (the good client's typing aside: no mutation reaches its random client id)."""
    if len(frame) > CAP:
        return "too_large"
    if frame[0] not in (0, 1):
        return "malformed_binary"
    try:
        if frame[0] == 1:
            check_awareness(frame)
            return None  # relayed as it is
        check_sync(frame, state=mirror.get_state)
        handle_sync_message(frame[1:], mirror)
    except (ValueError, RuntimeError):  # BadUpdate (the walk), or pycrdt's refusal
        return "malformed_binary"
    return None


def varuint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        if not number:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


@st.composite
def bad_binary(draw: st.DrawFn, updates: list[bytes]) -> Shot:
    """Garbage, or a real update of the hostile client's mutated: bits flipped, cut short, a
    length rewritten, bytes inserted; framed as an update or a sync step 2."""
    kind = draw(st.sampled_from(["garbage", "flip", "cut", "length", "insert", "oversized"]))
    if kind == "garbage":
        frame = bytes([draw(st.sampled_from([0, 1, 2, 255]))]) + draw(st.binary(max_size=64))
    elif kind == "oversized":
        chunk = draw(st.binary(min_size=1, max_size=8))
        frame = b"\x00\x02" + chunk * (CAP // len(chunk) + 1)
    else:
        update = bytearray(draw(st.sampled_from(updates)))
        at = draw(st.integers(0, len(update) - 1))
        if kind == "flip":
            for _ in range(draw(st.integers(1, 3))):
                update[draw(st.integers(0, len(update) - 1))] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            update = update[:at]
        elif kind == "length":
            claims = st.sampled_from([2**31, 3_400_000_000, 2**63, 255, 0]) | st.integers(0, 2**40)
            update[at:at + 1] = varuint(draw(claims))
        else:
            update[at:at] = draw(st.binary(min_size=1, max_size=6))
        sub = draw(st.sampled_from([1, 2]))
        frame = bytes([0, sub]) + varuint(len(update)) + bytes(update)
    return Shot("mallory", frame, LATER)


def settle(shot: Shot, mirror: Doc[Any]) -> Shot:
    if isinstance(shot.frame, bytes) and shot.expect == LATER:
        return replace(shot, expect=expected_for_binary(shot.frame, mirror))
    return shot


async def exchange(client: LiveClient, frames: list[str | bytes], tag: str) -> list[dict[str, Any]]:
    """Send ``frames``, then a ping; every text event up to its pong (the socket answers in
    order). A close fails the test with its code."""
    for frame in frames:
        if isinstance(frame, bytes):
            await client.comm.send_to(bytes_data=frame)
        else:
            await client.comm.send_to(text_data=frame)
    await client.comm.send_to(text_data=json.dumps({"type": "ping", "id": tag}))
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if await client.comm.receive_nothing(0.01, interval=0.001):
            continue
        output = await client.comm.receive_output()
        if output["type"] == "websocket.close":
            raise AssertionError(f"the server closed the socket: {output}")
        if output.get("text") is None:
            continue
        event = json.loads(output["text"])
        if event["type"] == "pong" and event["id"] == tag:
            return events
        events.append(event)
    raise AssertionError(f"no pong for {tag}")


def check_answers(shots: list[Shot], events: list[dict[str, Any]]) -> None:
    errors = [e for e in events if e["type"] == "error" and e["code"] not in RULES]
    expected = [shot for shot in shots if shot.expect is not None]
    assert [e["code"] for e in errors] == [s.expect for s in expected], [s.frame[:120] for s in expected]
    for shot, error in zip(expected, errors, strict=True):
        assert error["message"]
        if shot.field is not None:
            assert f"'{shot.field}'" in error["message"], (shot.frame, error)
    pongs = [e for e in events if e["type"] == "pong"]
    assert len(pongs) == sum(1 for s in shots if s.pong)


def test_a_hostile_client_cannot_crash_the_room_or_spoil_the_document(
    live: Live, django_user_model: Any, settings: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.SPARK_WS_MAX_MESSAGE_BYTES = CAP
    # The hostile sockets must reach the parser, not the per-socket rate limit (tested apart).
    monkeypatch.setattr(SessionConsumer, "text_rate", (1e9, 1e9))
    monkeypatch.setattr(SessionConsumer, "binary_rate", (1e9, 1e9))
    tokens = {}
    for name, role in (("mallory", Role.COLLABORATOR), ("vic", Role.VIEWER)):
        person = django_user_model.objects.create_user(username=name, password=f"pw-{name}-123")
        Participant.objects.create(session_id=live.session_id, user=person, role=role)
        tokens[name] = api_token_create(user=person)
    limits = Limits(path_chars=settings.SPARK_MAX_PATH_LENGTH)
    kept = Kept()
    clients: list[LiveClient] = []
    loop = asyncio.new_event_loop()
    run = loop.run_until_complete
    typed = random.Random(16)
    tried = {"text": 0, "binary": 0, "errors": 0, "batches": 0}
    try:
        good = run(connect(live))
        hostile = {name: run(connect(live, token=token)) for name, token in tokens.items()}
        clients += [good, *hostile.values()]
        run(good.pump(0.2))
        run(hostile["mallory"].pump(0.2))
        expected_text = ""
        run(good_types(good, "good.py", None))

        # Real updates from mallory's replica: the material the mutations start from.
        mallory = hostile["mallory"]
        updates = run(mallory_updates(mallory))
        mirror: Doc[Any] = Doc()
        mirror.apply_update(mallory.doc.get_update())

        frames = st.lists(
            st.one_of(bad_field(limits), bad_shape(), bad_binary(updates)), min_size=40, max_size=100,
        )

        # No shrinking: each try runs against the same live room, and the first failing batch
        # (printed) says enough.
        @fuzzing(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                 phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(shots=frames)
        def fuzz(shots: list[Shot]) -> None:
            nonlocal expected_text
            tried["batches"] += 1
            shots = [settle(shot, mirror) for shot in shots]
            for name, client in hostile.items():
                mine = [shot for shot in shots if shot.who == name]
                events = run(exchange(client, [shot.frame for shot in mine], f"batch-{tried['batches']}-{name}"))
                check_answers(mine, events)
                tried["errors"] += sum(1 for s in mine if s.expect is not None)
            tried["text"] += sum(1 for s in shots if isinstance(s.frame, str))
            tried["binary"] += sum(1 for s in shots if isinstance(s.frame, bytes))
            word = "".join(typed.choice("abcdefgh \n") for _ in range(typed.randint(1, 6)))
            run(good_types(good, "good.py", word))
            expected_text += word

        started = time.monotonic()
        logging.getLogger().addHandler(kept)
        try:
            fuzz()
        finally:
            logging.getLogger().removeHandler(kept)
        elapsed = time.monotonic() - started

        run(good.pump(0.3))
        assert good.text("good.py") == expected_text
        assert not good.of("turn.started"), "a hostile frame started a turn"
        newcomer = run(connect(live))
        run(newcomer.until_true(lambda: newcomer.text("good.py") == expected_text))
        assert texts(newcomer.doc) == texts(good.doc), "the good client and a newcomer differ"
        clients.append(newcomer)
    finally:
        run(shut_down(clients))
        loop.close()

    frames_tried = tried["text"] + tried["binary"]
    tracebacks = [r for r in kept.records if r.exc_info and r.name.startswith("spark_ide")]
    warnings = [r for r in kept.records if r.name == "spark_ide.live.doc_rules"]
    print(f"protocol fuzz: {frames_tried} frames ({tried['text']} text, {tried['binary']} binary), "
          f"{tried['errors']} errors expected and received, {len(warnings)} warning lines for "
          f"{BAD_FRAMES.total} refused binary frames in all, {elapsed:.1f} s")
    assert frames_tried >= 2000
    assert not tracebacks, [r.getMessage() for r in tracebacks[:3]]
    assert len(warnings) <= 1 + elapsed / BAD_FRAMES.every_s


async def shut_down(clients: list[LiveClient]) -> None:
    """Close the sockets and rooms, and end what still runs on the test's own loop."""
    for client in clients:
        with contextlib.suppress(Exception):
            await client.close()
    await ROOMS.close_all()
    await database_sync_to_async(connections.close_all)()
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


class Kept(logging.Handler):
    """What the server logs at WARNING and above while the frames fly."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def texts(doc: Doc[Any]) -> dict[str, str]:
    files = doc.get("files", type=Map)
    return {path: str(files[path]) for path in files}


async def good_types(client: LiveClient, path: str, word: str | None) -> None:
    """The well-behaved client: creates ``path`` (``word`` None), or types at its end."""
    files = client.doc.get("files", type=Map)
    if word is None:
        before = client.doc.get_state()
        with client.doc.transaction(origin="human"):
            files[path] = Text("")
        await client.comm.send_to(bytes_data=create_update_message(client.doc.get_update(before)))
        return
    await client.type_text(path, len(files[path]), word)
    await client.pump(0.001)


async def mallory_updates(client: LiveClient) -> list[bytes]:
    """A file of mallory's, typed into a few times: each real update is sent (so the room
    holds what mutated ones refer to) and kept."""
    doc = client.doc
    files = doc.get("files", type=Map)
    before = doc.get_state()  # only mallory's own changes: a mutated delete set stays hers
    with doc.transaction():
        files["mallory.py"] = Text("# mine\n")
    updates = [doc.get_update(before)]
    for word in ["x = 1\n", "y = [1, 2]\n", "héllo = 'wörld'\n", "z = {}\n"]:
        before = doc.get_state()
        with doc.transaction():
            files["mallory.py"].insert(len(files["mallory.py"]), word)
        updates.append(doc.get_update(before))
    for update in updates:
        await client.comm.send_to(bytes_data=create_update_message(update))
    await client.pump(0.1)
    return updates
