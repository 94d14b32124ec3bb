"""A room's memory log of turn events (``live.replay.ReplayLog``): bounded by bytes as well as
by count, never past what is stored; what it no longer keeps comes from storage, exactly."""

from __future__ import annotations

import dataclasses

import pytest

from spark_ide.live import replay
from spark_ide.live.event_log import EventLogBacklog
from spark_ide.live.events import EditStatus, TurnDelta, TurnEvent, TurnFinished, TurnStarted, encode
from spark_ide.live.outbox import Frame
from spark_ide.live.replay import ReplayLog, kept_bytes
from spark_ide.live.store import LiveSettings
from tests.support.fake_model import FakeModel
from tests.support.memory_store import MemoryRoomStore
from tests.support.room_rig import Received, room_rig

FILES = {"app.py": "print('hi')\n"}


class Rig:
    """A log over a store, with the pipeline's part played by hand: ``publish`` keeps and
    sends an event, ``store`` writes what was sent as the event log does (runs merged)."""

    def __init__(self, running: str | None = None, **settings: int) -> None:
        self.store = MemoryRoomStore()
        self.settings = LiveSettings(connect_model=FakeModel().connect, **settings)  # type: ignore[arg-type]
        self.sent = 0
        self.stored = 0
        self.unstored = EventLogBacklog()
        self.log = ReplayLog(store=self.store, settings=self.settings, sent=lambda: self.sent,
                             stored=lambda: self.stored, running=lambda: running)
        self.log.start(0, ())

    def publish(self, event: TurnEvent) -> Frame:
        frame = Frame(event, self.log.seq + 1)
        self.log.keep(frame)
        self.sent = frame.seq
        self.unstored.add_frame(frame)
        return frame

    async def write(self) -> None:
        await self.store.append_events(self.unstored.take_entries())
        self.stored = self.sent

    async def caught_up(self, after: int) -> list[Frame] | None:
        return self.log.catch_up(after, await self.log.stored_for(after))


def started(turn: str) -> TurnStarted:
    return TurnStarted(turn=turn, prompt="p", steered_from=None, effort="medium", author="ada")


def answer_of(frames: list[Frame], turn: str) -> str:
    return "".join(f.event.text for f in frames if isinstance(f.event, TurnDelta) and f.event.turn == turn)


async def test_past_its_bytes_the_log_drops_its_oldest_stored_events_and_a_reconnect_reads_them_from_storage() -> None:
    rig = Rig(replay_bytes=20 * kept_bytes(TurnDelta(turn="t1", text="piece 00 ")))
    rig.publish(started("t1"))
    held = rig.log.seq  # a page that saw the turn start, then left
    pieces = [f"piece {i:02d} " for i in range(60)]
    for piece in pieces[:40]:
        rig.publish(TurnDelta(turn="t1", text=piece))
    assert rig.log.kept == 41 and rig.log.floor == 0  # nothing is stored yet: everything is kept
    await rig.write()
    for piece in pieces[40:]:
        rig.publish(TurnDelta(turn="t1", text=piece))
    assert rig.log.kept <= 21 and rig.log.bytes <= rig.settings.replay_bytes + kept_bytes(TurnDelta(turn="t1", text=""))
    assert rig.log.floor > held
    frames = await rig.caught_up(held)
    assert frames is not None
    assert answer_of(frames, "t1") == "".join(pieces)  # every piece once, in order
    seqs = [frame.seq for frame in frames]
    assert seqs == sorted(seqs) and min(seqs) > held and max(seqs) == rig.log.seq


async def test_a_new_page_gets_a_stored_run_the_memory_logs_floor_cuts_through_whole() -> None:
    """The event log stores a running turn's deltas as one run; the memory log then drops the
    older part of that run (it is stored), so its floor falls inside the run. A page that joins
    gets the run from storage whole and the memory log's frames after it: no gap, nothing twice."""
    rig = Rig(running="t1", replay_bytes=20 * kept_bytes(TurnDelta(turn="t1", text="piece 00 ")))
    rig.publish(started("t1"))
    pieces = [f"piece {i:02d} " for i in range(45)]
    for piece in pieces[:40]:
        rig.publish(TurnDelta(turn="t1", text=piece))
    await rig.write()  # one stored run: seqs 2-41
    for piece in pieces[40:]:
        rig.publish(TurnDelta(turn="t1", text=piece))
    assert 2 < rig.log.floor < 41  # the floor cuts the stored run
    frames = rig.log.catch_up(None, await rig.log.recent_stored())
    assert frames is not None
    assert answer_of(frames, "t1") == "".join(pieces)
    seqs = [frame.seq for frame in frames]
    assert seqs == sorted(set(seqs))


async def test_events_not_stored_are_kept_whatever_the_budget() -> None:
    rig = Rig(replay_bytes=0)
    rig.publish(started("t1"))
    for i in range(30):
        rig.publish(TurnDelta(turn="t1", text=f"{i} "))
    assert rig.log.kept == 31
    await rig.write()
    rig.publish(TurnDelta(turn="t1", text="end"))  # not stored yet: the only one kept
    assert rig.log.kept == 1 and rig.log.floor == rig.log.seq - 1
    frames = await rig.caught_up(1)  # the rest from storage
    assert frames is not None and answer_of(frames, "t1") == "".join(f"{i} " for i in range(30)) + "end"


async def test_the_count_still_bounds_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "LOG_KEPT", 10)
    rig = Rig()
    for i in range(25):
        rig.publish(TurnDelta(turn="t1", text=f"{i} "))
    assert rig.log.kept == 10 and rig.log.floor == 15


async def test_old_frames_drop_their_encoded_text_and_a_replay_encodes_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replay, "TEXT_KEPT", 4)
    rig = Rig()
    status = EditStatus(turn="t1", block=0, path="app.py", state="applied", detail={"code": "x = 1\n"})
    frames, texts = [], []
    for event in [started("t1"), status, *(TurnDelta(turn="t1", text=f"{i} ") for i in range(8))]:
        frames.append(rig.publish(event))
        texts.append(frames[-1].text)  # sent: encoded once for every connection
    rig.publish(TurnDelta(turn="t1", text="last"))
    encoded = [frame._text is not None for frame in frames]  # what the frame holds
    assert encoded == [False] * 7 + [True] * 3  # the 4 newest (with "last") keep theirs
    assert [frame.text for frame in frames] == texts
    assert texts[1] == encode(status, 2)
    replayed = await rig.caught_up(1)
    assert replayed is not None and replayed[0].text == encode(status, 2)


async def test_a_room_with_a_tiny_budget_sends_a_reconnecting_page_everything_it_missed_once() -> None:
    async with room_rig(FILES, replay_bytes=1, log_batch_s=0.0) as rig:
        rig.prompt("talk")
        turn = (await rig.received.until(TurnStarted)).turn
        stream = await rig.model.next_stream()
        early = [f"early {i}. " for i in range(20)]
        for piece in early:
            stream.delta(piece)
        await rig.received.until(TurnDelta, lambda event: event.text.endswith("early 19. "))
        held = rig.received.frames[-1].seq
        late = [f"late {i}. " for i in range(30)]
        for piece in late:
            stream.delta(piece)
        await rig.received.until(TurnDelta, lambda event: event.text.endswith("late 29. "))
        await rig.room.files.store_events()  # stored: the room's log may now let them go
        stream.delta("end.")
        await rig.received.until(TurnDelta, lambda event: event.text.endswith("end."))
        assert rig.room.log.floor > held  # what the page missed is no longer in memory
        back = Received()
        conn = dataclasses.replace(rig.conn, id="c2", outbox=back)
        await rig.room.join(conn, after=held)
        stream.complete(None)
        await back.until(TurnFinished, lambda event: event.turn == turn)
        whole = "".join(early + late) + "end."
        before = "".join(f.event.text for f in rig.received.frames
                         if isinstance(f.event, TurnDelta) and f.seq <= held)
        assert before + back.answer(turn) == whole
        seqs = [frame.seq for frame in back.frames if isinstance(frame.event, TurnEvent)]
        assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and min(seqs) > held


async def test_an_event_renumbered_ahead_of_those_waiting_takes_its_place_in_the_log() -> None:
    """The pipeline sends a turn's text ahead of its block ends that wait for the document,
    renumbered (``live.pipeline``): the memory log moves it too, and a reconnect that holds
    what was sent gets the rest in order."""
    rig = Rig()
    rig.publish(started("t1"))
    ends = [rig.publish(EditStatus(turn="t1", block=b, path="a.py", state="applied")) for b in (0, 1)]
    text = rig.publish(TurnDelta(turn="t1", text="after the blocks"))
    first = ends[0].seq
    ends[0].renumber(first + 1)
    ends[1].renumber(text.seq)
    text.renumber(first)
    rig.log.moved_back(text, 2)
    rig.sent = text.seq  # what the pipeline has sent so far
    frames = await rig.caught_up(first - 1)
    assert frames is not None and [f.seq for f in frames] == [first]
    rig.sent = rig.log.seq
    frames = await rig.caught_up(first)
    assert frames is not None and [f.seq for f in frames] == [first + 1, first + 2]
    assert all(isinstance(f.event, EditStatus) for f in frames)
