"""The pairing benchmark's browser: a ``websockets`` client speaking PROTOCOL.md §2.

It sends JSON messages, keeps every JSON event with the monotonic time it arrived, and
answers nothing for Yjs (binary frames are only counted), so it costs the relay nothing a
browser would not.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
    started_at: float = 0.0  # when its turn.started reached the client

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
    return Turn(turn_id, deltas, browser.events[end][1], started_at=browser.events[began][0])


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


# -- the scale benchmarks' socket ------------------------------------------------------------

_TEXT, _BINARY, _CLOSE, _PING, _PONG, _CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0
_FINISHED = b'"turn.finished"'  # in a text frame: a turn.finished event (inside a JSON string it is escaped)


def client_frame(opcode: int, payload: bytes) -> bytes:
    """A masked client frame (RFC 6455 §5.3)."""
    size = len(payload)
    if size < 126:
        header = bytes([0x80 | opcode, 0x80 | size])
    elif size < 1 << 16:
        header = bytes([0x80 | opcode, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x80 | opcode, 0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    key = int.from_bytes((mask * (size // 4 + 1))[:size], "big")
    masked = (int.from_bytes(payload, "big") ^ key).to_bytes(size, "big") if size else b""
    return header + mask + masked


class Watcher(asyncio.Protocol):
    """A cheap session socket for the scale benchmarks (``fanout``, ``rooms``).

    Hundreds of them share the benchmark's one process (and the 2 cores) with the frame tap,
    so per frame it does only what it must: read the header, keep a text frame's payload with
    the time of the read that completed it, note a ``turn.finished``, answer a ping. JSON is
    parsed afterwards (``deltas_since``), off the hot path; nothing rescans what it holds.
    """

    def __init__(self, request: bytes, ready_marker: bytes) -> None:
        self._request = request
        self._ready_marker = ready_marker
        self.ready = asyncio.Event()  # set by the first text frame holding ``ready_marker``
        self.frames: list[tuple[float, bytes]] = []  # (arrival, payload) of each text frame
        self.binary_frames = 0
        self.finished = 0  # turn.finished events received so far
        self.closed = False
        self._buffer = bytearray()
        self._upgraded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._fragments: bytearray | None = None
        self._fragment_opcode = 0
        self._finish_seen = asyncio.Event()
        self._transport: asyncio.Transport | None = None

    @classmethod
    async def open(
        cls, url: str, token: str | None = None, *, ready_marker: bytes = b'"hello"', timeout: float = 30.0
    ) -> Watcher:
        """Connect to ``ws://host:port/path`` and wait for the upgrade. ``ready`` is set once a
        text frame holding ``ready_marker`` arrived: the IDE's join ends with a ``presence``,
        after the transcript, so a watcher waiting for it cannot take the transcript's
        ``turn.finished`` events for live ones."""
        parts = urlsplit(url)
        if parts.scheme != "ws" or parts.hostname is None or parts.port is None:
            raise ValueError(f"a watcher connects to ws://host:port/path, not {url!r}")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        key = base64.b64encode(os.urandom(16)).decode()
        auth = f"Authorization: Token {token}\r\n" if token else ""
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n"
        ).encode()
        loop = asyncio.get_running_loop()
        _, watcher = await loop.create_connection(lambda: cls(request, ready_marker), parts.hostname, parts.port)
        async with asyncio.timeout(timeout):
            await watcher._upgraded
        return watcher

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self._upgraded.done():
            self._upgraded.set_exception(ConnectionError("the server closed the socket before the upgrade"))
        self._finish_seen.set()

    def data_received(self, data: bytes) -> None:
        at = time.monotonic()
        buffer = self._buffer
        buffer += data
        if not self._upgraded.done():
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buffer[: buffer.find(b"\r\n")])
            del buffer[: end + 4]
            if b" 101 " not in status + b" ":
                self._upgraded.set_exception(ConnectionError(f"upgrade refused: {status.decode(errors='replace')}"))
                return
            self._upgraded.set_result(None)
        while (size := len(buffer)) >= 2:
            length = buffer[1] & 0x7F
            head = 2
            if length == 126:
                if size < 4:
                    return
                length, head = int.from_bytes(buffer[2:4], "big"), 4
            elif length == 127:
                if size < 10:
                    return
                length, head = int.from_bytes(buffer[2:10], "big"), 10
            if size < head + length:
                return
            first = buffer[0]
            payload = bytes(buffer[head : head + length])
            del buffer[: head + length]  # cheap: a bytearray drops its head without moving the rest
            self._frame(at, first & 0x80, first & 0x0F, payload)

    def _frame(self, at: float, fin: int, opcode: int, payload: bytes) -> None:
        if opcode == _CONTINUATION or not fin:
            if opcode != _CONTINUATION:
                self._fragments, self._fragment_opcode = bytearray(), opcode
            if self._fragments is None:
                raise ConnectionError("a continuation frame without a first fragment")
            self._fragments += payload
            if not fin:
                return
            payload, opcode, self._fragments = bytes(self._fragments), self._fragment_opcode, None
        if opcode == _TEXT:
            self.frames.append((at, payload))
            if not self.ready.is_set() and self._ready_marker in payload:
                self.ready.set()
            if _FINISHED in payload:
                self.finished += 1
                self._finish_seen.set()
        elif opcode == _BINARY:
            self.binary_frames += 1  # Yjs: counted, never answered
        elif opcode == _PING:
            self._write(_PONG, payload)
        elif opcode == _CLOSE:
            self._write(_CLOSE, payload[:2])
            if self._transport is not None:
                self._transport.close()

    def _write(self, opcode: int, payload: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(client_frame(opcode, payload))

    # -- the benchmark's side ------------------------------------------------------------------

    def send(self, message: Event) -> float:
        """Send a JSON message; returns when it was written."""
        at = time.monotonic()
        self._write(_TEXT, json.dumps(message).encode())
        return at

    async def until_finished(self, count: int, timeout: float = 60.0) -> None:
        """Wait until ``count`` turn.finished events have arrived in all."""
        async with asyncio.timeout(timeout):
            while self.finished < count:
                if self.closed:
                    raise ConnectionError("the server closed the socket")
                self._finish_seen.clear()
                await self._finish_seen.wait()

    def deltas_since(self, mark: int) -> list[tuple[float, str]]:
        """``(arrival, text)`` of every ``turn.delta`` among the text frames from index ``mark``."""
        deltas = []
        for at, payload in self.frames[mark:]:
            if b"turn.delta" in payload:
                event = json.loads(payload)
                if event.get("type") == "turn.delta":
                    deltas.append((at, str(event["text"])))
        return deltas

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._write(_CLOSE, (1000).to_bytes(2, "big"))
            self._transport.close()

    def abort(self) -> None:
        """Drop the socket without a close frame (a TCP reset): a page whose network went."""
        if self._transport is not None:
            self._transport.abort()

    def pause_reading(self) -> None:
        """Stop reading: the kernel's buffers fill, then the server's; a page that hangs."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def shrink_receive_buffer(self, size: int = 4096) -> None:
        """A small kernel receive buffer, so a paused reader makes the server hold its frames
        after a few KB instead of the few MB loopback would otherwise absorb."""
        sock = self._transport.get_extra_info("socket") if self._transport is not None else None
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
