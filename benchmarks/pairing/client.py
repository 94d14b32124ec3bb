"""The pairing benchmark's browser: a ``websockets`` client speaking PROTOCOL.md §2.

It sends JSON messages, keeps every JSON event with the monotonic time it arrived, and
answers nothing for Yjs (binary frames are only counted), so it costs the relay nothing a
browser would not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

Event = dict[str, Any]


class Browser:
    """A session socket as a script-driven browser holds it: every event, timed on arrival."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[tuple[float, Event]] = []
        self.binary_frames = 0
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, token: str | None = None) -> Browser:
        headers = {"Authorization": f"Token {token}"} if token else {}
        ws = await connect(url, additional_headers=headers, compression=None, max_size=None, open_timeout=30)
        browser = cls(ws)
        await browser.first(lambda e: e["type"] == "hello")
        return browser

    async def close(self) -> None:
        await self.ws.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in self.ws:
                at = time.monotonic()
                if isinstance(message, bytes):
                    self.binary_frames += 1  # Yjs: counted, never answered
                    continue
                self.events.append((at, json.loads(message)))
                self._arrived.set()
        self._arrived.set()

    async def send(self, message: Event) -> float:
        at = time.monotonic()
        await self.ws.send(json.dumps(message))
        return at

    async def first(self, matches: Callable[[Event], bool], start: int = 0, timeout: float = 60.0) -> int:
        """Index of the first event at or after ``start`` that ``matches``."""
        async with asyncio.timeout(timeout):
            i = start
            while True:
                while i < len(self.events):
                    if matches(self.events[i][1]):
                        return i
                    i += 1
                if self._reader.done():
                    raise ConnectionError("the server closed the session socket")
                self._arrived.clear()
                await self._arrived.wait()


@dataclass
class Turn:
    id: str
    deltas: list[tuple[float, str]]
    finished: Event

    @property
    def text(self) -> str:
        return "".join(text for _, text in self.deltas)


async def play(browser: Browser, prompt: str) -> Turn:
    """Prompt, then take the turn's deltas up to its ``turn.finished``."""
    start = len(browser.events)
    await browser.send({"type": "prompt", "text": prompt})
    began = await browser.first(lambda e: e["type"] == "turn.started", start)
    turn_id = browser.events[began][1]["turn"]
    return await take_turn(browser, turn_id, began)


async def take_turn(browser: Browser, turn_id: str, began: int) -> Turn:
    end = await browser.first(lambda e: e["type"] == "turn.finished" and e["turn"] == turn_id, began)
    deltas = [
        (at, event["text"]) for at, event in browser.events[began:end]
        if event["type"] == "turn.delta" and event["turn"] == turn_id
    ]
    return Turn(turn_id, deltas, browser.events[end][1])


def late_events(events: list[tuple[float, Event]]) -> int:
    """Events of a turn after its ``turn.finished`` that PROTOCOL.md §2 forbids: any delta, any
    edit status but the turn's own rollback."""
    finished: set[str] = set()
    late = 0
    for _, event in events:
        kind = event["type"]
        if kind == "turn.finished":
            finished.add(event["turn"])
        elif event.get("turn") in finished and (
            kind == "turn.delta" or (kind == "edit.status" and event.get("state") != "rolled_back")
        ):
            late += 1
    return late
