"""The model's socket parses the frames of its steady state itself (``dial.FrameSocket``):
whatever way the bytes are cut, every message arrives whole and in order, pings are
answered, and the first frame of another kind hands the socket to websockets for good."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosedError

from benchmarks.loopproxy import close_frame, server_frame
from spark_ide.upstream.dial import MAX_INCOMING_BYTES, FrameSocket


class Writes:
    """Records what the client writes to its transport (a pong, a close)."""

    def __init__(self, socket: FrameSocket) -> None:
        self.data: list[bytes] = []
        write = socket.transport.write

        def recording(data: bytes | bytearray | memoryview) -> None:
            self.data.append(bytes(data))
            write(data)

        socket.transport.write = recording  # type: ignore[method-assign]


@pytest.fixture
async def socket() -> AsyncIterator[FrameSocket]:
    async def quiet(connection: ServerConnection) -> None:
        await connection.wait_closed()

    async with serve(quiet, "127.0.0.1", 0, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        client = await connect(f"ws://127.0.0.1:{port}", create_connection=FrameSocket, compression=None)
        assert isinstance(client, FrameSocket)
        try:
            yield client
        finally:
            await client.close()


def _texts() -> tuple[list[str], bytes]:
    texts = ["a", "é" * 70, "x" * 200, json.dumps({"delta": "y" * 70_000}), "last"]  # 7-bit, 16-bit, 64-bit lengths
    return texts, b"".join(server_frame(0x1, text.encode()) for text in texts)


@pytest.mark.parametrize("cut", [1, 3, 7, 1000, 1 << 20])
async def test_every_message_arrives_whole_and_in_order_however_the_bytes_are_cut(
    socket: FrameSocket, cut: int
) -> None:
    got: list[str] = []
    socket.on_message = got.append
    texts, wire = _texts()
    for start in range(0, len(wire), cut):
        socket.data_received(wire[start : start + cut])
    assert got == texts
    assert socket._parsing is True  # parsed here throughout


async def test_a_ping_is_answered_and_a_pong_taken_in_the_steady_state(socket: FrameSocket) -> None:
    got: list[str] = []
    socket.on_message = got.append
    writes = Writes(socket)
    socket.data_received(server_frame(0x1, b"before") + server_frame(0x9, b"hi") + server_frame(0xA, b"??")
                         + server_frame(0x1, b"after"))
    assert got == ["before", "after"]
    assert socket._parsing is True
    assert len(writes.data) == 1 and writes.data[0][0] == 0x8A  # a pong (FIN, opcode 10)


FRAGMENT = server_frame(0x1, b"part", fin=False)


@pytest.mark.parametrize(
    "odd",
    [server_frame(0x2, b"binary"), server_frame(0x1, b"\xff\xfe"), FRAGMENT, bytes([0xC1, 0x01]) + b"r",
     close_frame(1000)],
    ids=["binary", "not-utf8", "fragment", "reserved-bit", "close"],
)
async def test_the_first_frame_of_another_kind_hands_the_socket_to_websockets(
    socket: FrameSocket, odd: bytes
) -> None:
    """It goes to websockets' parser, cut or not, and so does every frame after it; a message
    websockets queues waits for ``recv``, and the whole messages behind it wait behind it."""
    got: list[str] = []
    socket.on_message = got.append
    socket.data_received(server_frame(0x1, b"first") + odd[:1])  # a frame, then a cut in the odd one
    assert got == ["first"] and socket._parsing is True
    rest = odd[1:] + (server_frame(0x0, b"-end") if odd == FRAGMENT else b"") + server_frame(0x1, b"behind")
    socket.data_received(rest)
    assert socket._parsing is False
    assert got == ["first"]
    async with asyncio.timeout(5):
        if odd == FRAGMENT:
            assert await socket.recv() == "part-end"
            socket.taken()
            assert await socket.recv() == "behind"
        elif odd[0] & 0x0F == 0x2:
            assert await socket.recv() == b"binary"
            socket.taken()
            assert await socket.recv() == "behind"
        elif odd[0] & 0x0F == 0x1 and not odd[0] & 0x70:  # text that is not UTF-8: websockets fails the connection
            with pytest.raises(ConnectionClosedError):
                await socket.recv()
            assert socket.protocol.close_sent is not None and socket.protocol.close_sent.code == 1007
        else:  # a reserved bit (a protocol error), or the server's close
            await socket.wait_closed()
            code = socket.close_code if odd == close_frame(1000) else socket.protocol.close_sent.code
            assert code == (1000 if odd == close_frame(1000) else 1002)


async def test_a_frame_over_the_size_limit_is_websockets_to_refuse(socket: FrameSocket) -> None:
    socket.on_message = lambda text: None
    header = bytes([0x81, 127]) + (MAX_INCOMING_BYTES + 1).to_bytes(8, "big")
    socket.data_received(header + b"x" * 100)
    assert socket._parsing is False
    async with asyncio.timeout(5):
        await socket.wait_closed()
    assert socket.protocol.close_sent is not None
    assert socket.protocol.close_sent.code == 1009  # message too big
