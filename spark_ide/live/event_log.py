"""A room's turn events on their way to the stored event log (``RoomStore.append_events``).

They were sent already: they are stored after, in batches, at most one write per
``log_batch_s`` (a write per delta would keep the database from the document's writes), runs
of deltas merged as an outbox merges them, each with the time it was published (a replay
spreads a merged run's text over its span). A batch whose write failed is kept for the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from .events import TurnEvent
from .outbox import Backlog, Frame, TextRun
from .outbox import Item as Waiting
from .retry import with_retries
from .store import LiveSettings, StoredEvent

log = logging.getLogger(__name__)


def now_ms() -> int:
    """The wall clock in milliseconds since the Unix epoch (the event log's times)."""
    return time.time_ns() // 1_000_000


class EventLogBacklog(Backlog):
    """Turn events sent and not yet stored, merged as an outbox merges them, and the time
    each one was published: a merged run is stored with the times of its first and last
    part, so a replay can spread its text over that span."""

    def __init__(self) -> None:
        super().__init__()
        self.times: dict[int, int] = {}  # seq -> when it was published

    def add_frame(self, frame: Frame) -> None:
        if frame.at is not None:
            self.times[frame.seq] = frame.at
        super().add_frame(frame)

    def take_entries(self) -> list[StoredEvent]:
        times, self.times = self.times, {}
        return stored(self.take(), times)


def stored(items: list[Waiting], times: Mapping[int, int]) -> list[StoredEvent]:
    """A merged backlog of turn events as entries of the event log; ``times``: when each
    event (by seq) was published."""
    entries = []
    for item in items:
        if isinstance(item, TextRun):
            frame, first = item.frame(), item.first_seq
        elif isinstance(item, Frame):
            frame, first = item, item.seq
        else:
            continue
        if isinstance(frame.event, TurnEvent):
            at = times.get(first, frame.at)
            until = times.get(frame.seq, at)
            entries.append(StoredEvent(seq=frame.seq, first_seq=first, event=frame.event, at=at, until=until))
    return entries


class EventStore(Protocol):
    """Where the log is kept (``RoomStore``)."""

    async def append_events(self, events: Sequence[StoredEvent]) -> None: ...


class EventLog:
    """The turn events sent and not yet stored (``add_all``), written by ``run`` in batches."""

    def __init__(self, *, store: EventStore, settings: LiveSettings) -> None:
        self._store = store
        self._settings = settings
        self._unstored = EventLogBacklog()  # sent and not yet stored, merged as they wait
        self._kept: list[StoredEvent] = []  # a batch whose write failed, tried again first
        self._wake = asyncio.Event()
        self._storing: asyncio.Future[None] | None = None  # the write in flight
        self._writes = asyncio.Lock()  # one write at a time, in order
        self.stored_seq = 0  # the last event stored (the replay log keeps those after it)

    def add_all(self, frames: Sequence[Frame]) -> None:
        """Turn events were sent, in this order (a batch of the room's pipeline): they are
        stored with the next batch."""
        if not frames:
            return
        for frame in frames:
            self._unstored.add_frame(frame)
        self._wake.set()

    async def run(self) -> None:
        """Store the events in batches, at most one write per ``log_batch_s``."""
        while True:
            await self._wake.wait()
            await asyncio.sleep(self._settings.log_batch_s)
            self._wake.clear()
            self._storing = asyncio.ensure_future(self.store())
            await asyncio.shield(self._storing)  # close() waits for it instead of cancelling it
            self._storing = None

    async def store(self) -> None:
        """Every event sent so far, stored before this returns: the batch writer's work, and
        what a replay opened right after a turn waits for (it reads the record)."""
        async with self._writes:  # a failed batch is kept for the next: never two at once
            await self._store_batch()

    async def close(self) -> None:
        """The last write (``run``'s task is cancelled first): the one in flight, then the rest."""
        if self._storing is not None:
            with contextlib.suppress(Exception):
                await self._storing  # a failed batch is kept: the write below takes it
        await self.store()

    async def _store_batch(self) -> None:
        batch, self._kept = [*self._kept, *self._unstored.take_entries()], []
        if not batch:
            return
        try:
            await with_retries(lambda: self._store.append_events(batch), self._settings.persist_retries)
        except Exception as exc:
            log.warning("could not store %d turn events; kept for the next write: %s", len(batch), exc)
            self._settings.meter.persist_failed("events")
            self._kept = batch
            return
        self.stored_seq = max(self.stored_seq, batch[-1].seq)
