"""A connection's outbox: at once while the link is idle, merged (in seq order) while busy."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text, create_update_message

from spark_ide.live import events
from spark_ide.live.events import (
    EditStatus,
    FinishReason,
    Participant,
    Presence,
    Role,
    TurnDelta,
    TurnFinished,
    TurnProse,
    TurnStatus,
)
from spark_ide.live.outbox import PACE_S, Backlog, Barrier, Flush, Frame, Outbox, TextRun


class Link:
    """The socket's side: records what was sent; while ``busy`` a send does not return."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.busy = asyncio.Event()
        self.busy.set()

    async def text(self, data: str) -> None:
        self.sent.append(json.loads(data))
        await self.busy.wait()

    async def binary(self, data: bytes) -> None:
        self.sent.append(data)
        await self.busy.wait()


def status(seq: int, block: int, state: str) -> Frame:
    return Frame(EditStatus(turn="t", block=block, path="a.py", state=state, detail={"kind": "write"}), seq)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_idle_link_gets_each_event_at_once() -> None:
    link = Link()
    outbox = Outbox(link.text, link.binary)
    task = asyncio.create_task(outbox.run())
    for seq, text in enumerate(["a", "b", "c"], start=1):
        outbox.put_frame(Frame(TurnDelta(turn="t", text=text), seq))
        await settle()
        assert link.sent[-1] == {"type": "turn.delta", "turn": "t", "text": text, "seq": seq}
    task.cancel()


async def test_a_busy_link_gets_merged_events_in_seq_order_and_nothing_lost() -> None:
    link = Link()
    outbox = Outbox(link.text, link.binary)
    task = asyncio.create_task(outbox.run())
    link.busy.clear()
    outbox.put_frame(Frame(TurnDelta(turn="t", text="first "), 1))
    await settle()  # in flight now: what follows waits and merges
    frames = [
        Frame(TurnProse(turn="t", text="Intro "), 2),
        Frame(TurnDelta(turn="t", text="x"), 3),
        status(4, 0, "locating"),
        Frame(TurnDelta(turn="t", text="y"), 5),
        status(6, 0, "streaming"),
        Frame(TurnProse(turn="t", text="after "), 7),  # after the block opened: not merged into 2
        Frame(TurnDelta(turn="t", text="z"), 8),
        status(9, 0, "applied"),
        Frame(TurnProse(turn="t", text="more"), 10),
        Frame(TurnFinished(turn="t", status=TurnStatus.COMPLETED, reason=FinishReason.ANSWERED, metrics={}), 11),
    ]
    for frame in frames:
        outbox.put_frame(frame)
    link.busy.set()
    await settle()
    sent = link.sent
    assert [e["seq"] for e in sent] == sorted(e["seq"] for e in sent)  # in seq order
    assert "".join(e["text"] for e in sent if e["type"] == "turn.delta") == "first xyz"
    assert "".join(e["text"] for e in sent if e["type"] == "turn.prose") == "Intro after more"
    structure = [(e["type"], e.get("state") or e.get("text")) for e in sent if e["type"] != "turn.delta"]
    assert structure == [
        ("turn.prose", "Intro "), ("edit.status", "streaming"), ("turn.prose", "after "),
        ("edit.status", "applied"), ("turn.prose", "more"), ("turn.finished", None),
    ]
    assert len(sent) < 1 + len(frames)  # merged
    task.cancel()


async def test_a_busy_link_gets_only_the_newest_presence_in_its_place() -> None:
    """A socket that does not keep up through a storm of joins holds one presence (the newest,
    where it came), not one list per 0.1 s: the soak's last quarter grew 5,125 Participants."""
    link = Link()
    outbox = Outbox(link.text, link.binary)
    task = asyncio.create_task(outbox.run())
    link.busy.clear()
    outbox.put_frame(Frame(TurnDelta(turn="t", text="first "), 1))
    await settle()
    for n in range(1, 200):
        people = tuple(Participant.of(i, f"u{i}", Role.VIEWER) for i in range(n))
        outbox.put_frame(Frame(Presence(participants=people), 1))
        if n == 100:
            outbox.put_frame(Frame(TurnDelta(turn="t", text="second"), 2))
    assert len(outbox._pending.items) == 2  # the merged delta, then the newest presence
    link.busy.set()
    await settle()
    assert [e["type"] for e in link.sent] == ["turn.delta", "turn.delta", "presence"]
    assert len(link.sent[-1]["participants"]) == 199
    task.cancel()


async def test_document_updates_merge_while_busy() -> None:
    link = Link()
    outbox = Outbox(link.text, link.binary)
    task = asyncio.create_task(outbox.run())
    source: Doc[Any] = Doc()
    text = source.get("t", type=Text)
    updates: list[bytes] = []
    source.observe(lambda event: updates.append(event.update))
    link.busy.clear()
    outbox.put_raw(b"\x01raw")
    await settle()
    for word in ("one ", "two ", "three"):
        text += word
        outbox.put_update(updates[-1])
    link.busy.set()
    await settle()
    assert link.sent[0] == b"\x01raw"
    assert len(link.sent) == 2  # the three updates went as one
    replica: Doc[Any] = Doc()
    replica.apply_update(link.sent[1][3:])  # past the sync header and the length byte
    assert str(replica.get("t", type=Text)) == "one two three"
    task.cancel()


def test_a_frame_is_encoded_once_for_every_connection() -> None:
    frame = Frame(TurnDelta(turn="t", text="x"), 7)
    assert frame.text is frame.text


def test_a_delta_is_encoded_as_the_json_encoder_writes_its_payload() -> None:
    """Deltas and prose are written directly (no dict, no encoder dispatch): the same text
    as every other event's way, quotes, controls, non-ASCII and lone surrogates included."""
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    texts = ["", "plain words ", 'a "quoted" \\ back\\slash', "\x00\x01\n\t\r\x1f\x7f", "héllo wörld ✓ 漢字 🚀",
             "\ud800 lone \udfff", "</script>\u2028\u2029"]
    for kind in (TurnDelta, TurnProse):
        for text in texts:
            for seq in (0, 7, 10**15):
                event = kind(turn=f"t-{text[:2]}", text=text)
                assert Frame(event, seq).text == encoder.encode({**event.payload(), "seq": seq})


def test_a_text_encoded_again_right_after_is_its_own_payload_however_it_differs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step of prose publishes a delta and a prose of the same text, and the JSON string of
    the last text is kept for the next (escaped once): equal texts (other objects), texts that
    differ at the end, in case, in length or in one non-ASCII character, each is written as its
    payload."""
    assert Frame(TurnDelta(turn="t", text="before"), 1).text  # the text kept now: none of those below
    escaped: list[str] = []
    real = events._STRING

    def counted(text: str) -> str:
        escaped.append(text)
        return real(text)

    monkeypatch.setattr(events, "_STRING", counted)
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    texts = ["one line\n", "one line\n", "one line.", "One line\n", "one line\n" * 3, "", "", "été\n", "ete\n",
             "été\n", 'say "hi"\n', 'say "hi"\n']
    for index, text in enumerate(texts):
        for kind in (TurnDelta, TurnProse):
            event = kind(turn="t", text="".join(list(text)))  # an equal text, not the same object
            assert Frame(event, index).text == encoder.encode({**event.payload(), "seq": index})
    # Each run of equal texts was escaped once (the type and turn fields are escaped apart).
    assert [text for text in escaped if text not in ("turn.delta", "turn.prose", "t")] == [
        "one line\n", "one line.", "One line\n", "one line\n" * 3, "", "été\n", "ete\n", "été\n", 'say "hi"\n',
    ]


# -- sockets that take pre-framed bytes (a ``Writer``: under Daphne, pairing.daphne_writes) -----


class Wire:
    """A socket's writer: keeps every write (a list of frames)."""

    def __init__(self, fails: bool = False) -> None:
        self.writes: list[list[bytes]] = []
        self.fails = fails

    def write(self, frames: list[bytes]) -> None:
        if self.fails:
            raise OSError("the socket broke")
        self.writes.append(frames)

    def messages(self) -> list[Any]:
        """What was written, unframed: JSON events and binary messages, in order."""
        out: list[Any] = []
        for frame in (frame for write in self.writes for frame in write):
            assert frame[0] in (0x81, 0x82)  # FIN, text or binary, no extension bits
            size, head = frame[1], 2
            assert size < 0x80  # a server's frames are not masked
            if size == 126:
                size, head = int.from_bytes(frame[2:4], "big"), 4
            elif size == 127:
                size, head = int.from_bytes(frame[2:10], "big"), 10
            payload = frame[head:]
            assert len(payload) == size
            out.append(json.loads(payload) if frame[0] == 0x81 else payload)
        return out


def direct_outbox(wire: Wire) -> tuple[Outbox, asyncio.Task[None]]:
    async def never(_: Any) -> None:
        raise AssertionError("a socket with a writer never sends through the ASGI send")

    outbox = Outbox(never, never, writer=wire)
    return outbox, asyncio.create_task(outbox.run())


async def test_a_round_goes_to_each_socket_in_one_write_framed_once_for_all() -> None:
    flush = Flush.current()
    rounds = flush.rounds
    wires = [Wire() for _ in range(3)]
    outboxes = [direct_outbox(wire) for wire in wires]
    big = "y" * 70_000  # past a frame's 16-bit length
    frames = [
        Frame(TurnDelta(turn="t", text="x"), 1), Frame(TurnProse(turn="t", text=big), 2), status(3, 0, "locating"),
    ]
    update, raw = b"\x01\x00", b"\x01awareness"
    for outbox, _ in outboxes:
        for frame in frames:
            outbox.put_frame(frame)
        outbox.put_update(update)
        outbox.put_raw(raw)
    assert all(not wire.writes for wire in wires)  # nothing written until the loop gets to it
    await settle()
    assert flush.rounds == rounds + 1  # one callback for every socket
    for wire in wires:
        assert len(wire.writes) == 1  # everything waiting, in one write
        messages = wire.messages()
        assert [m["seq"] for m in messages[:3]] == [1, 2, 3]
        assert messages[1]["text"] == big
        assert messages[3:] == [create_update_message(update), raw]
    first = wires[0].writes[0]
    for wire in wires[1:]:  # the same bytes objects: each framed once
        assert all(a is b for a, b in zip(first, wire.writes[0], strict=True))
    for _, task in outboxes:
        task.cancel()


async def test_a_merged_run_is_framed_once_for_the_sockets_that_merged_it() -> None:
    wires = [Wire(), Wire()]
    outboxes = [direct_outbox(wire) for wire in wires]
    for outbox, _ in outboxes:
        for seq, text in enumerate("abc", start=1):
            outbox.put_frame(Frame(TurnDelta(turn="t", text=text), seq))
    await settle()
    for wire in wires:
        assert wire.messages() == [{"type": "turn.delta", "turn": "t", "text": "abc", "seq": 3}]
    assert wires[0].writes[0][0] is wires[1].writes[0][0]
    # A socket that merged other parts under the same seqs gets its own frame.
    (one, _), (other, _) = outboxes
    one.put_frame(Frame(TurnDelta(turn="u", text="p"), 4))
    one.put_frame(Frame(TurnDelta(turn="u", text="q"), 5))
    other.put_frame(Frame(TurnDelta(turn="u", text="P"), 4))
    other.put_frame(Frame(TurnDelta(turn="u", text="Q"), 5))
    await settle()
    assert wires[0].messages()[-1]["text"] == "pq"
    assert wires[1].messages()[-1]["text"] == "PQ"
    for _, task in outboxes:
        task.cancel()


async def test_rounds_keep_coming_and_a_cancelled_outbox_writes_no_more() -> None:
    wire = Wire()
    outbox, task = direct_outbox(wire)
    for seq in (1, 2):
        outbox.put_frame(Frame(TurnDelta(turn="t", text=str(seq)), seq))
        await settle()
    assert len(wire.writes) == 2
    task.cancel()
    await settle()
    outbox.put_frame(Frame(TurnDelta(turn="t", text="late"), 3))
    await settle()
    assert [m["text"] for m in wire.messages()] == ["1", "2"]


async def test_one_broken_socket_does_not_stop_the_others() -> None:
    broken, fine = Wire(fails=True), Wire()
    outboxes = [direct_outbox(broken), direct_outbox(fine)]
    for outbox, _ in outboxes:
        outbox.put_frame(Frame(TurnDelta(turn="t", text="x"), 1))
    await settle()
    assert fine.messages() == [{"type": "turn.delta", "turn": "t", "text": "x", "seq": 1}]
    broken.fails = False
    outboxes[0][0].put_frame(Frame(TurnDelta(turn="t", text="y"), 2))
    await settle()
    assert broken.messages() == [{"type": "turn.delta", "turn": "t", "text": "y", "seq": 2}]  # it goes on
    for _, task in outboxes:
        task.cancel()


async def test_a_lone_surrogate_goes_as_a_question_mark_not_as_a_failed_write() -> None:
    wire = Wire()
    outbox, task = direct_outbox(wire)
    outbox.put_frame(Frame(TurnDelta(turn="t", text="a\ud800b"), 1))
    await settle()
    assert wire.messages()[0]["text"] == "a?b"
    task.cancel()


_EVENT = st.one_of(
    st.tuples(st.just("delta"), st.sampled_from("tu"), st.sampled_from(["a", "b", "cd"])),
    st.tuples(st.just("prose"), st.sampled_from("tu"), st.sampled_from(["P", "Q", "RS"])),
    st.tuples(st.just("status"), st.sampled_from("tu"), st.integers(0, 1), st.sampled_from(["streaming", "applied"])),
    st.tuples(st.just("barrier")),
)


# -- a dense stream is paced ---------------------------------------------------------------


class TimedWire(Wire):
    """A writer that notes the loop's time of each write."""

    def __init__(self) -> None:
        super().__init__()
        self.at: list[float] = []

    @staticmethod
    async def never(_: Any) -> None:
        raise AssertionError("a socket with a writer never sends through the ASGI send")

    def write(self, frames: list[bytes]) -> None:
        super().write(frames)
        self.at.append(asyncio.get_running_loop().time())


async def stream(outbox: Outbox, chunks: list[str], every_s: float, first_seq: int = 1) -> int:
    """Each chunk as a turn's delta, one every ``every_s``; the next seq."""
    seq = first_seq
    for chunk in chunks:
        outbox.put_frame(Frame(TurnDelta(turn="t", text=chunk), seq))
        seq += 1
        await asyncio.sleep(every_s)
    return seq


async def test_a_dense_stream_is_written_at_most_once_per_pace_whole_and_in_order() -> None:
    wire = TimedWire()
    outbox, task = direct_outbox(wire)
    chunks = [f"{k:03d}" + "x" * 97 for k in range(150)]  # 100 characters a millisecond or more
    await stream(outbox, chunks, 0.001)
    await asyncio.sleep(PACE_S * 2)
    messages = wire.messages()
    assert "".join(m["text"] for m in messages) == "".join(chunks)  # nothing lost, in order
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(seqs) and seqs[-1] == 150
    # Written as they came until the (decaying) count passed DENSE_CHARS (320), some 4 deltas in:
    # after 10 deltas, at most once per pace.
    gaps = [b - a for a, b in zip(wire.at[10:], wire.at[11:], strict=False)]
    assert gaps and min(gaps) >= PACE_S - 0.001
    assert len(wire.writes) < 150 / 2  # far fewer writes than deltas
    task.cancel()


async def test_a_stream_slower_than_the_dense_rate_gets_every_delta_at_once() -> None:
    """A model at 1,000 tokens/s: a delta and its prose every millisecond (or a block's delta,
    update and status), each written in the round it came, never held."""
    wire = TimedWire()
    outbox, task = direct_outbox(wire)
    chunks = [f"w{k:02d} " for k in range(80)]
    for seq, chunk in enumerate(chunks):
        outbox.put_frame(Frame(TurnDelta(turn="t", text=chunk), 2 * seq + 1))
        outbox.put_frame(Frame(TurnProse(turn="t", text=chunk), 2 * seq + 2))
        await asyncio.sleep(0.001)
    await settle()
    assert len(wire.writes) == len(chunks)
    assert [m["text"] for m in wire.messages()] == [chunk for chunk in chunks for _ in range(2)]
    # An edit block at that rate: a delta, the document's update and the block's status each
    # millisecond (the updates' bytes do not count: the deltas count the block's text).
    seq = 2 * len(chunks) + 1
    for k in range(60):
        outbox.put_frame(Frame(TurnDelta(turn="t", text=f"x{k:02d} "), seq))
        outbox.put_update(b"\x01" * 60)
        outbox.put_frame(status(seq + 1, 0, "writing"))
        seq += 2
        await asyncio.sleep(0.001)
    await settle()
    assert len(wire.writes) == len(chunks) + 60
    # Minified JSON at that rate: ten characters a token, with its prose.
    for k in range(60):
        outbox.put_frame(Frame(TurnDelta(turn="t", text=f'"k{k:03d}":1,'), seq))
        outbox.put_frame(Frame(TurnProse(turn="t", text=f'"k{k:03d}":1,'), seq + 1))
        seq += 2
        await asyncio.sleep(0.001)
    await settle()
    assert len(wire.writes) == len(chunks) + 120
    task.cancel()


async def test_what_may_not_wait_goes_at_once_with_the_held_text_and_starts_the_count_again() -> None:
    wire = TimedWire()
    outbox, task = direct_outbox(wire)
    seq = await stream(outbox, ["y" * 300] * 4, 0.0005)  # dense now, and just written
    outbox.put_frame(Frame(TurnDelta(turn="t", text="held"), seq))
    await settle()
    written = len(wire.writes)
    assert "held" not in wire.messages()[-1]["text"]  # held for the pace
    finished = TurnFinished(turn="t", status=TurnStatus.COMPLETED, reason=FinishReason.ANSWERED, metrics={})
    outbox.put_frame(Frame(finished, seq + 1))
    await settle()
    assert len(wire.writes) == written + 1  # at once, the held text first
    assert [m["type"] for m in wire.messages()[-2:]] == ["turn.delta", "turn.finished"]
    assert wire.messages()[-2]["text"].endswith("held")
    # The next turn's first delta is not held back, however dense the last turn was.
    outbox.put_frame(Frame(TurnDelta(turn="u", text="z" * 300), seq + 2))
    await settle()
    assert len(wire.writes) == written + 2
    task.cancel()


async def test_an_awareness_message_goes_at_once_and_the_stream_stays_paced() -> None:
    wire = TimedWire()
    outbox, task = direct_outbox(wire)
    seq = await stream(outbox, ["y" * 300] * 4, 0.0005)
    outbox.put_raw(b"\x01awareness")  # someone's cursor moved
    await settle()
    assert wire.messages()[-1] == b"\x01awareness"
    written = len(wire.writes)
    outbox.put_frame(Frame(TurnDelta(turn="t", text="held"), seq))
    await settle()
    assert len(wire.writes) == written  # still dense: held for the pace
    await asyncio.sleep(PACE_S * 1.5)
    assert wire.messages()[-1]["text"] == "held"
    task.cancel()


async def test_pacing_off_writes_a_dense_stream_as_it_comes() -> None:
    wire = TimedWire()
    outbox = Outbox(wire.never, wire.never, writer=wire, pace_s=0)
    task = asyncio.create_task(outbox.run())
    for seq in range(1, 41):  # 300 characters every half millisecond
        outbox.put_frame(Frame(TurnDelta(turn="t", text="y" * 300), seq))
        await asyncio.sleep(0.0005)
    await settle()
    assert len(wire.writes) == 40
    task.cancel()


async def test_a_closed_outbox_writes_nothing_it_held() -> None:
    wire = TimedWire()
    outbox, task = direct_outbox(wire)
    seq = await stream(outbox, ["y" * 600] * 2, 0.0005)
    outbox.put_frame(Frame(TurnDelta(turn="t", text="held"), seq))
    await settle()
    written = len(wire.writes)
    task.cancel()
    await asyncio.sleep(PACE_S * 2)
    assert len(wire.writes) == written
    assert "held" not in [m["text"] for m in wire.messages()]


def _render(items: list[Any], turn: str) -> str:
    """``turn``'s prose and block statuses in order (statuses as markers), each barrier too."""
    out: list[str] = []
    for item in items:
        if isinstance(item, Barrier):
            out.append("|B|")
        elif isinstance(item, TextRun):
            if item.kind is TurnProse and item.turn == turn:
                out.append("".join(item.parts))
        elif isinstance(item.event, TurnProse) and item.event.turn == turn:
            out.append(item.event.text)
        elif isinstance(item.event, EditStatus) and item.event.turn == turn:
            out.append(f"|S{item.event.block}{item.event.state[0]}|")
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVENT, max_size=40))
def test_a_backlog_merges_and_keeps_each_turns_prose_and_statuses_in_order(steps: list[tuple[Any, ...]]) -> None:
    """Whatever waits: seqs only increase, every turn's deltas and prose are whole, and a turn's
    prose and block statuses keep their order; only a block's progress followed by the block's
    next status (nothing of its turn's prose or statuses, and no barrier, between them) is dropped."""
    backlog = Backlog()
    original: list[Any] = []
    for seq, step in enumerate(steps, start=1):
        if step[0] == "barrier":
            item: Any = Barrier(seq)
            backlog.items.append(item)
            original.append(item)
            continue
        if step[0] == "status":
            event: Any = EditStatus(turn=step[1], block=step[2], path="a.py", state=step[3])
        else:
            event = (TurnDelta if step[0] == "delta" else TurnProse)(turn=step[1], text=step[2])
        frame = Frame(event, seq)
        original.append(Frame(event, seq))
        backlog.add_frame(frame)
    seqs = [item.seq for item in backlog.items if isinstance(item, Frame | TextRun)]
    assert len(seqs) == len(backlog.items) - sum(isinstance(item, Barrier) for item in backlog.items)
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for turn in "tu":
        for kind in (TurnDelta, TurnProse):
            def text(items: list[Any], kind: type = kind, turn: str = turn) -> str:
                parts: list[str] = []
                for i in items:
                    if isinstance(i, TextRun) and i.kind is kind and i.turn == turn:
                        parts.extend(i.parts)
                    elif (isinstance(i, Frame) and isinstance(i.event, TurnDelta | TurnProse)
                          and type(i.event) is kind and i.event.turn == turn):
                        parts.append(i.event.text)
                return "".join(parts)
            assert text(backlog.items) == text(original)
        expected = _render(original, turn)
        for block in (0, 1):  # a progress right before its block's next status stands for nothing
            progress, next_status = f"|S{block}s|", f"|S{block}"
            while progress + next_status in expected:
                expected = expected.replace(progress + next_status, next_status)
        assert _render(backlog.items, turn) == expected
