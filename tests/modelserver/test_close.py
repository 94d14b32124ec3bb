from __future__ import annotations

import asyncio

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.modelserver.server import CLOSE_TIMEOUT_S, ModelServer
from tests.support.recording_engine import RecordingEngine
from tests.support.waits import eventually

from .protocol_client import WAIT_S, client_for, running_server

LIBRARY_CLOSE_TIMEOUT_S = 10.0  # websockets' default close_timeout
LONG = "[say]" + "long " * 1000 + "[/say]"  # 1,000 tokens: 10 s at 100 tokens/s


async def test_closing_the_socket_stops_generation() -> None:
    engine = RecordingEngine(tokens_per_s=100, ttft_s=0.0)
    async with running_server(engine) as server:
        async with client_for(server) as ws:
            await ws.create(LONG)
            await ws.until(protocol.OUTPUT_TEXT_DELTA)
        await eventually(lambda: engine.generations[0].end is not None, WAIT_S)
    (generation,) = engine.generations
    assert generation.end == "stopped"
    assert generation.tokens < len(split_tokens("long " * 1000))


async def test_the_server_keeps_serving_after_a_client_vanishes() -> None:
    async with running_server(RecordingEngine(tokens_per_s=100, ttft_s=0.0)) as server:
        async with client_for(server) as ws:
            await ws.create(LONG)
            await ws.until(protocol.OUTPUT_TEXT_DELTA)
        async with client_for(server) as ws:
            events = await ws.run("[rate:100000][say]fresh[/say]")
    assert events[-1]["type"] == protocol.COMPLETED


async def test_stopping_does_not_wait_long_for_a_peer_that_no_longer_reads() -> None:
    """A client that opened a socket and then stopped answering (its process stalled) holds
    the server's shutdown up for one short close timeout, not the library's 10 s."""
    server = ModelServer(RecordingEngine(tokens_per_s=100, ttft_s=0.0), ServerConfig(port=0))
    await server.start()
    host, port = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert b"101" in await reader.readline()  # upgraded; from now on it reads nothing
    # Held up by the silent peer for the library's 10 s, the stop would miss this bound; ours is
    # CLOSE_TIMEOUT_S (1 s), and the rest is slack for a loaded machine.
    assert CLOSE_TIMEOUT_S < LIBRARY_CLOSE_TIMEOUT_S - 2
    await asyncio.wait_for(server.stop(), LIBRARY_CLOSE_TIMEOUT_S - 2)
    writer.close()
