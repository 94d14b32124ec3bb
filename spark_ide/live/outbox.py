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
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from pycrdt import create_update_message, merge_updates

from .events import EditStatus, Event, Presence, TurnDelta, TurnProse, encode


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


def _turn_structure(item: Item, turn: str) -> bool:
    """Prose and block statuses of ``turn`` keep their order against each other."""
    if isinstance(item, TextRun):
        return item.kind is TurnProse and item.turn == turn
    return isinstance(item, Frame) and isinstance(item.event, TurnProse | EditStatus) and item.event.turn == turn


class Backlog:
    """Items waiting in order, merged as they arrive (the rules in the module docstring)."""

    def __init__(self) -> None:
        self.items: list[Item] = []

    def __bool__(self) -> bool:
        return bool(self.items)

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
    # types are compared directly, nothing is built while scanning.

    def _merge_text(self, frame: Frame, event: TurnDelta | TurnProse) -> Item | None:
        """Take out the waiting delta (or prose) run ``frame`` joins and return it joined, or None."""
        items, turn, kind = self.items, event.turn, type(event)
        for index in range(len(items) - 1, -1, -1):
            older = items[index]
            if type(older) is TextRun:
                if older.kind is not kind or older.turn != turn:
                    continue
                run = older
            elif type(older) is Frame and type(older.event) is kind and older.event.turn == turn:
                run = TextRun(kind, turn, older.seq, older.seq, [older.event.text])
            elif type(older) is Barrier:
                return None
            else:
                continue
            if kind is TurnProse and any(_turn_structure(item, turn) for item in items[index + 1 :]):
                return None
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
            if isinstance(older, Frame) and isinstance(older.event, EditStatus) and older.event.turn == turn:
                if older.event.block != event.block or older.event.final:
                    return None
                if any(_turn_structure(item, turn) for item in items[index + 1 :]):
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


class Outbox:
    def __init__(
        self, send_text: Callable[[str], Awaitable[None]], send_bytes: Callable[[bytes], Awaitable[None]]
    ) -> None:
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._pending = Backlog()
        # The run loop waits on this future while nothing waits to be sent: waking it costs
        # one ``set_result`` (a room wakes every connection's outbox for every batch).
        self._idle: asyncio.Future[None] | None = None

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
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    async def run(self) -> None:
        """Send what waits, oldest first, until cancelled."""
        loop = asyncio.get_running_loop()
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
