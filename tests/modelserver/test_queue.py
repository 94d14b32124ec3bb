from __future__ import annotations

from spark_ide import responses_protocol as protocol

from .fake_engines import EchoEngine
from .protocol_client import Client, client_for, running_server, text_of, types_of


async def test_a_second_create_waits_behind_the_running_response(ws: Client) -> None:
    await ws.create("[rate:500][say]" + "first " * 20 + "[/say]")
    await ws.create("[say]second[/say]")
    events = await ws.until(protocol.COMPLETED)
    assert protocol.CREATED not in types_of(events[1:])
    following = await ws.response()
    assert following[0]["type"] == protocol.CREATED
    assert text_of(following) == "second"


async def test_queued_creates_run_in_order(ws: Client) -> None:
    for word in ("one", "two", "three"):
        await ws.create(f"[say]{word}[/say]")
    texts = [text_of(await ws.response()) for _ in range(3)]
    assert texts == ["one", "two", "three"]


async def test_errors_for_queued_messages_keep_their_place(ws: Client) -> None:
    await ws.create("[rate:500][say]" + "busy " * 20 + "[/say]")
    await ws.send({"type": protocol.CREATE, "input": "no model"})
    await ws.create("[say]after[/say]")
    first = await ws.response()
    error = await ws.recv()
    last = await ws.response()
    assert first[-1]["type"] == protocol.COMPLETED
    assert error["error"]["code"] == protocol.MISSING_PARAMETER
    assert text_of(last) == "after"


async def test_a_queued_create_can_chain_to_the_running_response() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        await ws.create("first")
        created = await ws.recv()
        await ws.create("second", previous_response_id=created["response"]["id"])
        await ws.until(protocol.COMPLETED)
        chained = await ws.response()
    assert chained[-1]["type"] == protocol.COMPLETED
    assert text_of(chained) == "user: first\nassistant: user: first\n\nuser: second\n"
