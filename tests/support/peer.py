"""A session socket over a real network connection (``websockets``), with a Yjs replica,
for tests that run the IDE as separate processes (``benchmarks.pairing.stack.Stack``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from pycrdt import Doc, Map, Text, YMessageType, create_update_message, handle_sync_message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed


def say(text: str, rate: int = 1000) -> str:
    """A prompt that makes the scripted engine write exactly ``text``."""
    return f"[rate:{rate}][say]{text}[/say]"


UNFINISHED_BLOCK = ("locating", "streaming")


def mergeable(event: dict[str, Any]) -> bool:
    """Not a turn event, or one that a busy connection's outbox merges into a later one (a
    turn's deltas and prose, a block's unfinished statuses): connections differ there."""
    kind = event["type"]
    if not kind.startswith(("turn.", "edit.")):
        return True
    return kind in ("turn.delta", "turn.prose") or (kind == "edit.status" and event.get("state") in UNFINISHED_BLOCK)


class Peer:
    """A session socket with a Yjs replica that reconnects (``?after=``) when closed, to
    whichever process is given."""

    def __init__(self, name: str, token: str) -> None:
        self.name = name
        self.token = token
        self.events: list[dict[str, Any]] = []
        self.doc: Doc[Any] = Doc()
        self.ws: ClientConnection | None = None
        self.reader: asyncio.Task[None] | None = None
        self.closed_with: int | None = None
        self.hellos = 0

    async def open(self, ws_url: str) -> None:
        last = max((e["seq"] for e in self.events if "seq" in e), default=None)
        url = ws_url if last is None else f"{ws_url}?after={last}"
        self.closed_with = None
        self.ws = await connect(url, additional_headers={"Authorization": f"Token {self.token}"}, max_size=None)
        self.reader = asyncio.create_task(self._read(self.ws))
        await self.until(lambda e: e["type"] == "hello", start=len(self.events))

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    if message[0] == YMessageType.SYNC:
                        self.received(message)
                        reply = handle_sync_message(message[1:], self.doc)
                        if reply is not None:
                            await ws.send(reply)
                    continue
                event = json.loads(message)
                self.hellos += event["type"] == "hello"
                self.events.append(event)
        except ConnectionClosed:
            pass
        self.closed_with = ws.close_code if ws.close_code is not None else 1006

    def received(self, message: bytes) -> None:
        """A sync message from the server, before the replica takes it (for subclasses)."""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.ws is not None
        await self.ws.send(json.dumps(message))

    async def type_text(self, path: str, index: int, text: str) -> None:
        files = self.doc.get("files", type=Map)
        before = self.doc.get_state()
        target: Text = files[path]
        target.insert(index, text)
        assert self.ws is not None
        await self.ws.send(create_update_message(self.doc.get_update(before)))

    def text(self, path: str) -> str | None:
        files = self.doc.get("files", type=Map)
        return str(files[path]) if path in files else None

    async def until(self, predicate: Any, *, start: int = 0, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[start:]:
                if predicate(event):
                    return event
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: nothing matched in {timeout}s; {[e['type'] for e in self.events]}")
            await asyncio.sleep(0.02)

    async def until_true(self, check: Any, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: not reached in {timeout}s")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader

    def sequence(self) -> list[tuple[int, str]]:
        """The turn events' structure as received: (seq, type), without what a busy
        connection's buffer may merge (text runs, a block's unfinished statuses)."""
        return [(e["seq"], e["type"]) for e in self.events if not mergeable(e)]

    def joined(self, kind: str) -> str:
        return "".join(e.get("text", "") for e in self.events if e["type"] == kind)
