from __future__ import annotations

from spark_ide import responses_protocol as protocol

from .fake_engines import EchoEngine
from .protocol_client import client_for, running_server, text_of, types_of


async def test_it_returns_an_id_and_no_text_for_generate_false() -> None:
    engine = EchoEngine()
    async with running_server(engine) as server, client_for(server) as ws:
        events = await ws.run("Warm up on this.", instructions="Be kind.", generate=False)
    assert types_of(events) == [protocol.CREATED, protocol.IN_PROGRESS, protocol.COMPLETED]
    completed = events[-1]["response"]
    assert completed["id"] == events[0]["response"]["id"]
    assert completed["output"] == []
    assert completed["usage"]["output_tokens"] == 0
    assert [m.content for m in engine.prepared[0].messages] == ["Be kind.", "Warm up on this."]


async def test_it_chains_a_generation_from_a_warm_up() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        warm = await ws.run("first context", generate=False)
        events = await ws.run("then this", previous_response_id=warm[-1]["response"]["id"])
    assert events[-1]["type"] == protocol.COMPLETED
    assert text_of(events) == "user: first context\nuser: then this\n"
