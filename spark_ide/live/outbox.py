"""Each connection's outbound buffer: sent at once while the link is idle, merged while busy.

Daphne has no write backpressure, and a viewer on a slow link must not slow the Pilot nor
grow memory without bound. A connection whose previous send has returned gets the next
frame at once; while a send is in flight, what arrives waits here and is merged: a turn's
deltas into one, its prose into one (unless a block status came between), a block's
progress into its newer progress, document updates into one, who is in the room (presence, a
whole list each time) into the newer list. Nothing else is dropped. Updates are never merged
across a ``document.replaced``: those before it are of the old document.

A merged item moves to the end of the queue and takes the newest ``seq``, so frames always
leave in ``seq`` order: a client that resumes after the highest ``seq`` it holds misses
nothing and sees nothing twice. Merged text is kept as parts and joined once, when sent.

A dense stream is paced. A model at Spark's top speed (20,000 tokens/s) brings a page a
thousand frames a second, a turn's delta, its prose and its statuses for every step: each
one a task of the browser's main thread, for text it shows once per animation frame. Once the
model's deltas written to a socket run faster than ``DENSE_CHARS`` per ``DENSE_TAU_S`` (prose
at some 4,000 tokens/s), what waits for it is written at most every ``pace_s`` (``PACE_S``, the
server's ``SPARK_WS_PACE_MS``), merged. Anything else that comes (a turn's start or end, a
steer, an error, sync and awareness messages) goes at once with what waits, and a turn's start,
steer or end starts the count again (a steered turn's first token is not held back; someone's
cursor moving, an awareness message, does not). Below that rate nothing waits: a person
reading at 1,000 tokens/s gets every delta as it comes.

A socket that takes pre-framed bytes (a ``Writer``: under Daphne, ``pairing.daphne_writes``)
has no task of its own: what waits for it is written by the process's ``Flush`` once the
event loop gets to it, everything in one write, together with every other such socket that
has something waiting (a room's batch to 500 sockets: one callback, one write per socket).
Each event is framed once for all of them in a round, and so is a merged run, a document
update or a binary message that several sockets take in the same round (the frames are
not kept past it: the room's replay log holds its events' text only).
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from pycrdt import create_update_message, merge_updates

from .events import EditStatus, Event, Presence, TurnDelta, TurnFinished, TurnProse, TurnStarted, TurnSteered, encode
from .wsframe import binary_frame, text_frame

log = logging.getLogger(__name__)


class Frame:
    """A JSON event as sent, encoded on first use and then shared by every connection.
    ``at``: when the room's pipeline took it (ms since the Unix epoch; the event log keeps it)."""

    __slots__ = ("_text", "at", "event", "seq")

    def __init__(self, event: Event, seq: int, at: int | None = None) -> None:
        self.event = event
        self.seq = seq
        self.at = at
        self._text: str | None = None

    @classmethod
    def encoded(cls, event: Event, seq: int, text: str) -> Frame:
        """A frame whose text was encoded already (by the process that owns the room)."""
        frame = cls(event, seq)
        frame._text = text
        return frame

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = encode(self.event, self.seq)
        return self._text

    def renumber(self, seq: int) -> None:
        """Give a frame not yet sent another ``seq`` (``live.pipeline``: text that goes ahead of
        a block's end that waits)."""
        self.seq = seq
        self._text = None

    def forget_text(self) -> None:
        """Drop the encoded text (a replay log's old frame): ``text`` encodes it again. Not
        for a frame made by ``encoded`` from a relayed event, whose text is all it has."""
        self._text = None


@dataclass(slots=True)
class TextRun:
    """Merged deltas (or prose) of one turn, waiting to be sent as one event."""

    kind: type[TurnDelta] | type[TurnProse]
    turn: str
    first_seq: int  # the seq of its first part
    seq: int  # the seq of its last part: the run's own
    parts: list[str] = field(default_factory=list)

    def frame(self) -> Frame:
        return Frame(self.kind(turn=self.turn, text="".join(self.parts)), self.seq)


@dataclass(slots=True)
class DocUpdate:
    """A Yjs document update, sent as a y-protocols sync update message."""

    data: bytes


@dataclass(frozen=True, slots=True)
class RawBinary:
    """A binary message sent as it is (sync steps, awareness)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Barrier:
    """An item that nothing later merges past (``live.owner``: an item addressed to one
    connection in a room's shared stream)."""

    payload: object


Item = Frame | TextRun | DocUpdate | RawBinary | Barrier
_MERGEABLE = (TurnDelta, TurnProse, EditStatus)
_TURN_BOUNDS = (TurnStarted, TurnSteered, TurnFinished)  # a new stream of text begins after each

# Pacing (the module docstring). The text written to a socket is counted with an exponential
# decay of DENSE_TAU_S: a steady stream of r characters a second counts r * DENSE_TAU_S.
PACE_S = 0.008  # at most one write per half frame of a 60 Hz screen while the stream is dense (the default)
DENSE_TAU_S = 0.016
# 20,000 characters a second of the model's deltas: prose at 5,000 tokens/s brings some 25,000,
# code some 18,000; minified JSON at 1,000 tokens/s (ten characters a token) 10,000, never paced.
DENSE_CHARS = 320


def paced_chars(item: Item) -> int | None:
    """What ``item`` adds to its socket's dense-stream count: a turn's deltas, their characters
    (the model's own rate); its prose, a block's status or a document update, 0 (they carry the
    same text again, or its progress); None for an item that is never held back."""
    if isinstance(item, TextRun):
        return sum(len(part) for part in item.parts) if item.kind is TurnDelta else 0
    if isinstance(item, DocUpdate):
        return 0
    if isinstance(item, Frame):
        event = item.event
        if type(event) is TurnDelta:
            return len(event.text)
        if type(event) is TurnProse or type(event) is EditStatus:
            return 0
    return None


class Backlog:
    """Items waiting in order, merged as they arrive (the rules in the module docstring)."""

    def __init__(self) -> None:
        self.items: list[Item] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def paceable(self) -> bool:
        """Everything waiting may wait for the pace (a stream's text, statuses and updates)."""
        return all(paced_chars(item) is not None for item in self.items)

    def add_frame(self, frame: Frame) -> None:
        event = frame.event
        if type(event) is Presence:
            self._drop_presence()
        elif self.items and isinstance(event, _MERGEABLE):
            if isinstance(event, EditStatus):
                merged = self._merge_status(frame, event)
            else:
                merged = self._merge_text(frame, event)
            if merged is not None:
                self.items.append(merged)
                return
        self.items.append(frame)

    # Both run once per event per connection (and for the room's batch and its event log):
    # types are compared directly, nothing is built while scanning, and each looks at the
    # items after the one it merges with on its way back to it (once: a long backlog costs
    # one pass). Prose and block statuses of a turn keep their order against each other: a
    # prose run does not merge past a status of its turn, nor a progress past prose.

    def _merge_text(self, frame: Frame, event: TurnDelta | TurnProse) -> Item | None:
        """Take out the waiting delta (or prose) run ``frame`` joins and return it joined, or None."""
        items, turn, kind = self.items, event.turn, type(event)
        prose = kind is TurnProse
        for index in range(len(items) - 1, -1, -1):
            older = items[index]
            if type(older) is TextRun:
                if older.kind is not kind or older.turn != turn:
                    continue
                run = older
            elif type(older) is Frame:
                earlier = older.event
                if type(earlier) is kind and earlier.turn == turn:
                    run = TextRun(kind, turn, older.seq, older.seq, [earlier.text])
                elif prose and type(earlier) is EditStatus and earlier.turn == turn:
                    return None
                else:
                    continue
            elif type(older) is Barrier:
                return None
            else:
                continue
            del items[index]
            run.parts.append(event.text)
            run.seq = frame.seq
            return run
        return None

    def _drop_presence(self) -> None:
        """Take out the waiting presence: the newer one lists everyone (a storm of joins
        announced it every 0.1 s to sockets that did not keep up)."""
        items = self.items
        for index in range(len(items) - 1, -1, -1):
            older = items[index]
            if type(older) is Barrier:
                return
            if type(older) is Frame and type(older.event) is Presence:
                del items[index]
                return  # at most one waits: each one added took out the one before

    def _merge_status(self, frame: Frame, event: EditStatus) -> Item | None:
        """Drop the waiting progress of ``frame``'s block (a newer progress stands for it)."""
        items, turn = self.items, event.turn
        for index in range(len(items) - 1, -1, -1):
            older = items[index]
            if type(older) is Barrier:
                return None
            if type(older) is TextRun:
                if older.kind is TurnProse and older.turn == turn:
                    return None
            elif type(older) is Frame:
                earlier = older.event
                if type(earlier) is TurnProse and earlier.turn == turn:
                    return None
                if type(earlier) is EditStatus and earlier.turn == turn:
                    if earlier.block != event.block or earlier.final:
                        return None
                    del items[index]
                    return frame
        return None

    def add_update(self, update: bytes) -> None:
        for index in range(len(self.items) - 1, -1, -1):
            older = self.items[index]
            if type(older) is Barrier:
                break
            if type(older) is Frame and older.event.parts_documents:
                break  # the waiting update is of the old document: never merged with one of the new
            if isinstance(older, DocUpdate):
                del self.items[index]
                update = merge_updates(older.data, update)
                break
        self.items.append(DocUpdate(update))

    def add_raw(self, message: bytes) -> None:
        self.items.append(RawBinary(message))

    def add_barrier(self, barrier: Barrier) -> None:
        self.items.append(barrier)

    def take(self) -> list[Item]:
        items, self.items = self.items, []
        return items


def merged(frames: Iterable[Frame]) -> list[Frame]:
    """``frames`` as an outbox busy all along would send them (the rules of ``Backlog``), merged
    once for every page that gets them: a batch of the room's pipeline, a reconnecting page's
    catch-up."""
    backlog = Backlog()
    for frame in frames:
        backlog.add_frame(frame)
    items = backlog.take()
    return [item.frame() if isinstance(item, TextRun) else item for item in items if isinstance(item, Frame | TextRun)]


class Writer(Protocol):
    """A socket that takes pre-framed WebSocket frames (``live.wsframe``) as they are."""

    def write(self, frames: list[bytes]) -> None:
        """Write ``frames`` in order, in one write; nothing once the socket is no longer open."""


class Flush:
    """The outboxes with a ``Writer`` that have something waiting, written in one callback of
    the event loop (one per loop: ``Flush.current()``). What several of them take in the same
    round is framed once, kept here for the round: an event (the same ``Frame``), a merged run
    (the same turn, kind, seqs and parts), a document update or a binary message (the same
    bytes object, as a room hands every outbox)."""

    _of_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Flush] = weakref.WeakKeyDictionary()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._due: list[Outbox] = []
        self._scheduled = False
        self._runs: dict[tuple[object, ...], tuple[list[str], bytes]] = {}
        self._frames: dict[int, tuple[Frame, bytes]] = {}
        self._binary: dict[int, tuple[bytes, bytes]] = {}
        self.rounds = 0  # callbacks run so far (tests)
        self.writes = 0  # writes handed to writers so far (tests)

    @classmethod
    def current(cls) -> Flush:
        """The running loop's flush (tests run several loops one after another, Daphne one)."""
        loop = asyncio.get_running_loop()
        found = cls._of_loop.get(loop)
        if found is None:
            found = cls._of_loop[loop] = cls(loop)
        return found

    def add(self, outbox: Outbox) -> None:
        self._due.append(outbox)
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self.rounds += 1
        try:
            while self._due:  # an outbox given more while this round writes is written in it too
                due, self._due = self._due, []
                for outbox in due:
                    try:
                        self.writes += outbox.write_now(self)
                    except Exception:  # one socket's failure is its own: the others are written
                        log.exception("could not write to a session socket")
        finally:
            self._frames.clear()
            self._runs.clear()
            self._binary.clear()

    def wire(self, item: Item) -> bytes | None:
        """``item`` as a frame (None: nothing to send, a barrier)."""
        if type(item) is Frame:
            kept = self._frames.get(id(item))
            if kept is not None and kept[0] is item:  # kept holds the frame: its id is not reused meanwhile
                return kept[1]
            wire = text_frame(item.text)
            self._frames[id(item)] = (item, wire)
            return wire
        if type(item) is TextRun:
            key = (item.kind, item.turn, item.first_seq, item.seq)
            run = self._runs.get(key)
            if run is not None and run[0] == item.parts:
                return run[1]
            wire = text_frame(item.frame().text)
            self._runs[key] = (list(item.parts), wire)
            return wire
        if type(item) is DocUpdate:
            return self._binary_wire(item.data, lambda data: binary_frame(create_update_message(data)))
        if type(item) is RawBinary:
            return self._binary_wire(item.data, binary_frame)
        return None

    def _binary_wire(self, data: bytes, frame: Callable[[bytes], bytes]) -> bytes:
        kept = self._binary.get(id(data))
        if kept is not None and kept[0] is data:  # kept holds ``data``: its id is not reused meanwhile
            return kept[1]
        wire = frame(data)
        self._binary[id(data)] = (data, wire)
        return wire


class Outbox:
    """A connection's outbound buffer (the module docstring). With a ``writer``, the process's
    ``Flush`` writes what waits; else ``run`` sends it, a message at a time, through
    ``send_text`` and ``send_bytes``. Either way ``run`` is the outbox's life: cancelling it
    stops the sending."""

    def __init__(
        self, send_text: Callable[[str], Awaitable[None]], send_bytes: Callable[[bytes], Awaitable[None]],
        writer: Writer | None = None, pace_s: float = PACE_S,
    ) -> None:
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._pending = Backlog()
        # The run loop waits on this future while nothing waits to be sent: waking it costs
        # one ``set_result`` (a room wakes every connection's outbox for every batch).
        self._idle: asyncio.Future[None] | None = None
        self._writer = writer
        self._flush = Flush.current() if writer is not None else None
        self._due = False  # in the flush's round
        self._closed = False
        # Pacing (written by the flush only): the decayed count of text written, when it was
        # last updated, the last write, and the timer of a paced write.
        self._pace_s = pace_s  # 0: never paced
        self._dense = 0.0
        self._dense_at = 0.0
        self._written_at = 0.0
        self._pace_timer: asyncio.TimerHandle | None = None

    @property
    def direct(self) -> bool:
        """Written by the process's ``Flush`` (pre-framed), not by ``run``."""
        return self._writer is not None

    def put_frame(self, frame: Frame) -> None:
        self._pending.add_frame(frame)
        self._wake()

    def put_update(self, update: bytes) -> None:
        self._pending.add_update(update)
        self._wake()

    def put_raw(self, message: bytes) -> None:
        self._pending.add_raw(message)
        self._wake()

    def _wake(self) -> None:
        flush = self._flush
        if flush is not None:
            if self._due or self._closed:
                return
            # The count is compared undecayed first: below the threshold, no clock is read.
            if self._dense >= DENSE_CHARS and self._pace_s and self._pending.paceable():
                wait = self._pace_wait(flush)
                if wait > 0:
                    if self._pace_timer is None:
                        self._pace_timer = flush.loop.call_later(wait, self._paced)
                    return
            self._due = True
            flush.add(self)
            return
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    def _pace_wait(self, flush: Flush) -> float:
        """How long what waits is held (0: written in this round): the rest of the pace, while
        the stream is dense."""
        now = flush.loop.time()
        if self._decayed(now) < DENSE_CHARS:
            return 0.0
        return self._written_at + self._pace_s - now

    def _decayed(self, now: float) -> float:
        """The dense-stream count as it stands at ``now``."""
        return self._dense * math.exp((self._dense_at - now) / DENSE_TAU_S)

    def _stop_pacing(self) -> None:
        if self._pace_timer is not None:
            self._pace_timer.cancel()
            self._pace_timer = None

    def _paced(self) -> None:
        self._pace_timer = None
        if not self._due and not self._closed and self._pending and self._flush is not None:
            self._due = True
            self._flush.add(self)

    def write_now(self, flush: Flush) -> int:
        """Write everything waiting in one write (``Flush``); the number of writes (0 or 1)."""
        self._due = False
        self._stop_pacing()  # written now: something that may not wait came
        if self._closed or self._writer is None or not self._pending:
            return 0
        items = self._pending.take()
        frames = [wire for item in items if (wire := flush.wire(item)) is not None]
        if not frames:
            return 0
        self._writer.write(frames)
        self._count(items, flush.loop.time())
        return 1

    def _count(self, items: list[Item], now: float) -> None:
        """Add what was written to the dense-stream count; a turn's start, steer or end starts
        it again from what follows."""
        chars = 0
        for item in items:
            if isinstance(item, Frame) and isinstance(item.event, _TURN_BOUNDS):
                chars, self._dense = 0, 0.0
            else:
                chars += paced_chars(item) or 0
        self._dense = self._decayed(now) + chars
        self._dense_at = self._written_at = now

    async def run(self) -> None:
        """Send what waits, oldest first, until cancelled."""
        loop = asyncio.get_running_loop()
        if self._writer is not None:
            try:
                await loop.create_future()  # the flush writes; this only waits to be cancelled
            finally:
                self._closed = True
                self._stop_pacing()
        while True:
            if not self._pending:
                self._idle = loop.create_future()
                await self._idle
            items = self._pending.items
            while items:
                item = items.pop(0)
                if isinstance(item, TextRun):
                    item = item.frame()
                if isinstance(item, Frame):
                    await self._send_text(item.text)
                elif isinstance(item, DocUpdate):
                    await self._send_bytes(create_update_message(item.data))
                elif isinstance(item, RawBinary):
                    await self._send_bytes(item.data)
                items = self._pending.items
