from __future__ import annotations

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engines.scripted import split_tokens
from tests.support.recording_engine import RecordingEngine
from tests.support.waits import eventually

from .protocol_client import WAIT_S, client_for, running_server

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
