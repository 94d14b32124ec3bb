"""Each connection's outbound buffer: sent at once while the link is idle, merged while busy.

Daphne has no write backpressure, and a viewer on a slow link must not slow the Pilot nor
grow memory without bound. A connection whose previous send has returned gets the next
frame at once; while a send is in flight, what arrives waits here and is merged: a turn's
deltas into one, its prose into one (unless a block status came between), a block's
progress into its newer progress, document updates into one. Nothing is dropped.

A merged item moves to the end of the queue and takes the newest ``seq``, so frames always
leave in ``seq`` order: a client that resumes after the highest ``seq`` it holds misses
nothing and sees nothing twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from pycrdt import create_update_message, merge_updates

from .events import EditStatus, Event, TurnDelta, TurnEvent, TurnProse, encode


@dataclass(frozen=True, slots=True)
class Frame:
    """A JSON event as sent: encoded once by the room, shared by every connection."""

    event: Event
    seq: int
    text: str

    @classmethod
    def of(cls, event: Event, seq: int) -> Frame:
        return cls(event, seq, encode(event, seq))


@dataclass(slots=True)
class DocUpdate:
    """A Yjs document update, sent as a y-protocols sync update message."""

    data: bytes


@dataclass(frozen=True, slots=True)
class RawBinary:
    """A binary message sent as it is (sync steps, awareness)."""

    data: bytes


Item = Frame | DocUpdate | RawBinary


def _mergeable(older: Frame, newer: Frame, later: list[Item]) -> Event | None:
    """The event that stands for ``older`` then ``newer``, when one can; ``later`` is what
    waits between them."""
    a, b = older.event, newer.event
    if not (isinstance(a, TurnEvent) and isinstance(b, TurnEvent)) or a.turn != b.turn or type(a) is not type(b):
        return None
    if isinstance(a, TurnDelta) and isinstance(b, TurnDelta):
        return replace(a, text=a.text + b.text)
    # Prose and block statuses keep their order against each other (the transcript shows
    # prose, block, prose): they merge only when nothing of their turn's structure is between.
    if any(isinstance(item, Frame) and isinstance(item.event, TurnProse | EditStatus)
           and item.event.turn == a.turn for item in later):
        return None
    if isinstance(a, TurnProse) and isinstance(b, TurnProse):
        return replace(a, text=a.text + b.text)
    if isinstance(a, EditStatus) and isinstance(b, EditStatus) and a.block == b.block and not a.final:
        return b
    return None


class Outbox:
    def __init__(
        self, send_text: Callable[[str], Awaitable[None]], send_bytes: Callable[[bytes], Awaitable[None]]
    ) -> None:
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._pending: list[Item] = []
        self._wake = asyncio.Event()

    def put_frame(self, frame: Frame) -> None:
        for index in range(len(self._pending) - 1, -1, -1):
            older = self._pending[index]
            if not isinstance(older, Frame):
                continue
            merged = _mergeable(older, frame, self._pending[index + 1 :])
            if merged is not None:
                del self._pending[index]
                frame = Frame.of(merged, frame.seq)
                break
            if isinstance(older.event, TurnEvent) and isinstance(frame.event, TurnEvent) \
                    and older.event.turn == frame.event.turn and type(older.event) is type(frame.event):
                break  # the nearest of its kind could not take it: older ones cannot either
        self._pending.append(frame)
        self._wake.set()

    def put_update(self, update: bytes) -> None:
        for index in range(len(self._pending) - 1, -1, -1):
            older = self._pending[index]
            if isinstance(older, DocUpdate):
                del self._pending[index]
                update = merge_updates(older.data, update)
                break
        self._pending.append(DocUpdate(update))
        self._wake.set()

    def put_raw(self, message: bytes) -> None:
        self._pending.append(RawBinary(message))
        self._wake.set()

    async def run(self) -> None:
        """Send what waits, oldest first, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                item = self._pending.pop(0)
                if isinstance(item, Frame):
                    await self._send_text(item.text)
                elif isinstance(item, DocUpdate):
                    await self._send_bytes(create_update_message(item.data))
                else:
                    await self._send_bytes(item.data)
