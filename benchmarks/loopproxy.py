"""A loopback TCP proxy for WebSocket tests and benchmarks.

It adds a one-way delay to each direction (25 ms each way = 50 ms round trip), counts the
connections it carried, and can end the proxied sockets the way a provider's edge would:
a close frame with a chosen code, an empty close frame (seen as 1005), or a cut TCP
connection (seen as 1006). It can also slip a raw text frame into the server's stream.
Server frames are forwarded whole, so anything injected lands between two frames. With
``websocket=False`` the proxy carries any TCP stream (HTTP, SSE) chunk by chunk as it arrives,
with the same delays; frame injection and close frames need WebSocket framing.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from dataclasses import dataclass, field

_HEADER_END = b"\r\n\r\n"


def server_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """An unmasked (server-to-client) WebSocket frame (``fin``: the message's last frame)."""
    size = len(payload)
    first = (0x80 if fin else 0) | opcode
    if size < 126:
        header = struct.pack("!BB", first, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, 126, size)
    else:
        header = struct.pack("!BBQ", first, 127, size)
    return header + payload


def close_frame(code: int | None) -> bytes:
    return server_frame(0x8, b"" if code is None else struct.pack("!H", code))


def frame_length(buffer: bytes | bytearray) -> int | None:
    """Bytes in the first complete frame of ``buffer`` (None: not complete yet)."""
    if len(buffer) < 2:
        return None
    masked, size = buffer[1] & 0x80, buffer[1] & 0x7F
    offset = 2
    if size == 126:
        if len(buffer) < 4:
            return None
        size, offset = struct.unpack_from("!H", buffer, 2)[0], 4
    elif size == 127:
        if len(buffer) < 10:
            return None
        size, offset = struct.unpack_from("!Q", buffer, 2)[0], 10
    total = offset + (4 if masked else 0) + size
    return total if len(buffer) >= total else None


@dataclass(eq=False)
class _Link:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    to_client: asyncio.Queue[tuple[float, bytes | None]] = field(default_factory=asyncio.Queue)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class LoopProxy:
    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        delay_s: float = 0.0,
        emulate_tcp_handshake: bool = False,
        websocket: bool = True,
    ) -> None:
        self.target = (target_host, target_port)
        self.delay_s = delay_s  # one way, each direction; may be changed while running
        # The local accept is instant; with this set, a new connection's first bytes wait
        # one extra round trip, as they would behind a real SYN / SYN-ACK exchange.
        self.emulate_tcp_handshake = emulate_tcp_handshake
        self.websocket = websocket  # False: forward raw chunks (no frame parsing downstream)
        self.server_delay_s = 0.0  # extra delay on the server-to-client direction only
        self.connections = 0
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def base_url(self, path: str = "/v1") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self) -> LoopProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        self.cut_all()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def inject_text(self, text: str) -> None:
        """Slip a text frame into every server-to-client stream, between two frames."""
        self.inject_frames([server_frame(0x1, text.encode())])

    def inject_frames(self, frames: list[bytes]) -> None:
        """Slip these raw frames (``server_frame``), in a row, into every server-to-client
        stream, between two frames."""
        self._need_websocket()
        for link in self._links:
            due = self._due()
            for frame in frames:
                link.to_client.put_nowait((due, frame))

    def close_all(self, code: int | None) -> None:
        """Send a close frame with ``code`` (None: empty payload) and drop the connections."""
        self._need_websocket()
        for link in list(self._links):
            link.to_client.put_nowait((self._due(), close_frame(code)))
            link.to_client.put_nowait((self._due(), None))

    def cut_all(self) -> None:
        """Drop every connection without a close frame (the client sees 1006)."""
        for link in list(self._links):
            self._drop(link)

    def _need_websocket(self) -> None:
        if not self.websocket:
            raise RuntimeError("frames can only be injected into WebSocket streams (websocket=True)")

    def _due(self) -> float:
        return time.monotonic() + self.delay_s + self.server_delay_s

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.connections += 1
        link = _Link(writer, up_writer)
        self._links.add(link)
        to_server: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
        link.tasks = [
            asyncio.create_task(self._pump_up(reader, to_server)),
            asyncio.create_task(self._deliver(to_server, up_writer, link)),
            asyncio.create_task(self._pump_down(up_reader, link)),
            asyncio.create_task(self._deliver(link.to_client, writer, link)),
        ]

    async def _pump_up(
        self, reader: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes | None]]
    ) -> None:
        handshake = 2 * self.delay_s if self.emulate_tcp_handshake else 0.0
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                queue.put_nowait((time.monotonic() + self.delay_s + handshake, chunk))
                handshake = 0.0
        queue.put_nowait((time.monotonic() + self.delay_s, None))

    async def _pump_down(self, reader: asyncio.StreamReader, link: _Link) -> None:
        with contextlib.suppress(ConnectionError):
            await self._frames_down(reader, link)
        link.to_client.put_nowait((self._due(), None))

    async def _frames_down(self, reader: asyncio.StreamReader, link: _Link) -> None:
        buffer = bytearray()
        handshake_done = False
        while chunk := await reader.read(65536):
            if not self.websocket:
                link.to_client.put_nowait((self._due(), chunk))
                continue
            buffer += chunk
            if not handshake_done:
                end = buffer.find(_HEADER_END)
                if end < 0:
                    continue
                link.to_client.put_nowait((self._due(), bytes(buffer[: end + 4])))
                del buffer[: end + 4]
                handshake_done = True
            while (size := frame_length(buffer)) is not None:
                link.to_client.put_nowait((self._due(), bytes(buffer[:size])))
                del buffer[:size]

    async def _deliver(
        self,
        queue: asyncio.Queue[tuple[float, bytes | None]],
        writer: asyncio.StreamWriter,
        link: _Link,
    ) -> None:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                self._drop(link)
                return
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    def _drop(self, link: _Link) -> None:
        if link in self._links:
            self._links.discard(link)
            link.client.transport.abort()
            link.server.transport.abort()
            current = asyncio.current_task()
            for task in link.tasks:
                if task is not current:
                    task.cancel()
