"""``live.pipeline.Pipeline``'s order: the model's text on its way (deltas, prose, a block's
progress) does not wait for the document updates being saved before it; an event that tells
of the document (a block applied, a turn finished) does, and whatever comes after it waits
behind it. Events always leave in ``seq`` order, and every update is saved before it is sent."""

from __future__ import annotations

import asyncio
from typing import Any

from pycrdt import Doc, Text

from spark_ide.live.events import (
    EditStatus,
    FinishReason,
    Presence,
    TurnDelta,
    TurnFinished,
    TurnProse,
    TurnStatus,
)
from spark_ide.live.outbox import Frame
from spark_ide.live.pipeline import overtakes
from tests.support.pipeline_rig import bare_pipeline


class Store:
    """Saves an update only when the test lets it; records what was saved."""

    def __init__(self) -> None:
        self.saved: list[bytes] = []
        self.saving = asyncio.Event()
        self.may_save = asyncio.Event()

    async def append_update(self, update: bytes) -> int:
        self.saving.set()
        await self.may_save.wait()
        self.saved.append(update)
        return len(self.saved)

    async def write_files(self, texts: Any, current: Any = None) -> bool:
        return True

    async def append_events(self, events: Any) -> None:
        return None


class Transport:
    """What the pages were sent, in order: events by (type, seq), updates as ``("update", -1)``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.sent: list[tuple[str, int]] = []
        self.updates = 0

    def frame(self, frame: Frame) -> None:
        self.sent.append((frame.event.type, frame.seq))

    def update(self, update: bytes) -> None:
        self.updates += 1
        assert len(self.store.saved) >= self.updates, "an update was sent before it was saved"
        self.sent.append(("update", -1))


def _update(text: str) -> bytes:
    doc: Doc[Any] = Doc()
    doc["t"] = Text(text)
    return doc.get_update()


FINISHED = TurnFinished(turn="t1", status=TurnStatus.COMPLETED, reason=FinishReason.ANSWERED, metrics={})


def _status(seq: int, state: str) -> Frame:
    return Frame(EditStatus(turn="t1", block=0, path="a.py", state=state), seq)


async def _until(condition: Any) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


def test_which_events_may_overtake_the_document() -> None:
    assert overtakes(TurnDelta(turn="t1", text="x"))
    assert overtakes(TurnProse(turn="t1", text="x"))
    assert overtakes(EditStatus(turn="t1", block=0, path="a.py", state="streaming"))
    assert overtakes(EditStatus(turn="t1", block=0, path="a.py", state="locating"))
    for final in ("applied", "rolled_back", "failed"):
        assert not overtakes(EditStatus(turn="t1", block=0, path="a.py", state=final))
    assert not overtakes(FINISHED)
    assert not overtakes(Presence(participants=()))


async def test_text_on_its_way_goes_out_while_the_update_before_it_is_saved() -> None:
    store = Store()
    transport = Transport(store)
    pipeline = bare_pipeline(store, transport)
    pipeline.start()
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="<write a.py>"), 1))
    pipeline.put_update(_update("line 1\n"))
    await asyncio.wait_for(store.saving.wait(), 2)  # the save is in flight and does not end
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="line 2"), 2))
    pipeline.put_frame(_status(3, "streaming"))
    pipeline.put_frame(Frame(TurnProse(turn="t1", text="and"), 4))
    await _until(lambda: len(transport.sent) == 4)
    assert transport.sent == [("turn.delta", 1), ("turn.delta", 2), ("edit.status", 3), ("turn.prose", 4)]
    assert pipeline.sent_seq == 4  # a page joining now is sent these, and the rest live

    # A block's end tells of the document: it waits for the update before it. Text of its
    # turn goes ahead of it, renumbered (it takes the status's seq, the status the next one);
    # the turn's end waits too, and nothing goes ahead of that.
    applied = _status(5, "applied")
    pipeline.put_frame(applied)
    after = Frame(TurnDelta(turn="t1", text="after"), 6)
    pipeline.put_frame(after)
    assert transport.sent[-1] == ("turn.delta", 5) and (after.seq, applied.seq) == (5, 6)
    pipeline.put_frame(Frame(FINISHED, 7))
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="late"), 8))
    await asyncio.sleep(0.05)
    assert len(transport.sent) == 5 and pipeline.sent_seq == 5

    store.may_save.set()
    await _until(lambda: len(transport.sent) == 9)
    assert transport.sent[5:] == [("update", -1), ("edit.status", 6), ("turn.finished", 7), ("turn.delta", 8)]
    assert pipeline.sent_seq == 8

    # Nothing waits now: text goes out at once again.
    pipeline.put_frame(Frame(TurnDelta(turn="t2", text="next"), 9))
    assert transport.sent[-1] == ("turn.delta", 9)
    await pipeline.close()
    seqs = [seq for kind, seq in transport.sent if kind != "update"]
    assert seqs == sorted(seqs) and len(store.saved) == 1


async def test_events_before_the_first_update_are_not_held_and_nothing_overtakes_a_waiting_event() -> None:
    store = Store()
    transport = Transport(store)
    pipeline = bare_pipeline(store, transport)
    pipeline.put_frame(Frame(Presence(participants=()), 0))  # not text on its way: queued
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="a"), 1))  # behind it, so queued too
    pipeline.put_update(_update("x"))
    pipeline.put_frame(_status(2, "failed"))
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="b"), 3))
    assert transport.sent == []
    pipeline.start()
    await asyncio.wait_for(store.saving.wait(), 2)
    await _until(lambda: len(transport.sent) == 2)
    assert transport.sent == [("presence", 0), ("turn.delta", 1)]  # before the update: at once
    store.may_save.set()
    await _until(lambda: len(transport.sent) == 5)
    assert transport.sent[2:] == [("update", -1), ("edit.status", 2), ("turn.delta", 3)]
    await pipeline.close()


async def test_only_a_turns_own_block_ends_are_gone_ahead_of_and_the_memory_log_follows() -> None:
    store = Store()
    transport = Transport(store)
    moved: list[tuple[int, int]] = []
    pipeline = bare_pipeline(store, transport)
    pipeline._moved_back = lambda frame, past: moved.append((frame.seq, past))
    pipeline.start()
    pipeline.put_update(_update("x"))
    await asyncio.wait_for(store.saving.wait(), 2)
    pipeline.put_frame(_status(1, "applied"))
    pipeline.put_frame(Frame(EditStatus(turn="t1", block=1, path="b.py", state="failed"), 2))
    pipeline.put_frame(Frame(EditStatus(turn="t1", block=2, path="c.py", state="streaming"), 3))
    assert transport.sent == [("edit.status", 1)] and moved == [(1, 2)]  # the next block's progress went ahead
    pipeline.put_frame(Frame(TurnDelta(turn="t2", text="other turn"), 4))  # not its turn's block ends: waits
    pipeline.put_frame(Frame(TurnDelta(turn="t1", text="own turn"), 5))  # behind an event of another turn: waits
    assert len(transport.sent) == 1
    store.may_save.set()
    await _until(lambda: len(transport.sent) == 6)
    assert [seq for kind, seq in transport.sent if kind != "update"] == [1, 2, 3, 4, 5]
    await pipeline.close()
