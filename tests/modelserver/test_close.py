from __future__ import annotations

import asyncio

from .fake_engines import ProbeEngine
from .protocol_client import WAIT_S, client_for, running_server


async def test_closing_the_socket_stops_generation() -> None:
    engine = ProbeEngine(tokens_per_s=100)
    async with running_server(engine) as server:
        async with client_for(server) as ws:
            await ws.create("[say]" + "long " * 1000 + "[/say]")
            await ws.until("response.output_text.delta")
        await asyncio.wait_for(engine.ended.wait(), WAIT_S)
    assert not engine.ran_to_the_end
    assert engine.pieces < 1000


async def test_the_server_keeps_serving_after_a_client_vanishes() -> None:
    async with running_server(ProbeEngine(tokens_per_s=100)) as server:
        async with client_for(server) as ws:
            await ws.create("[say]" + "long " * 1000 + "[/say]")
            await ws.until("response.output_text.delta")
        async with client_for(server) as ws:
            events = await ws.run("[rate:100000][say]fresh[/say]")
    assert events[-1]["type"] == "response.completed"
