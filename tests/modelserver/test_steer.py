from __future__ import annotations

from spark_ide import responses_protocol as protocol

from .protocol_client import Client, client_for, running_server, text_of

SLOW = "[rate:200][say]" + "draft " * 300 + "[/say]"


async def test_it_steers_a_running_response_into_a_successor() -> None:
    async with running_server(steer_extension=True) as server, client_for(server) as ws:
        await ws.create(SLOW, instructions="keep me")
        started = await ws.until(protocol.OUTPUT_TEXT_DELTA)
        target = started[0]["response"]["id"]
        await ws.send(
            {
                "type": protocol.STEER,
                "previous_response_id": target,
                "input": "[say]steered text[/say]",
            }
        )
        old = await ws.until(protocol.INCOMPLETE)
        successor = await ws.response()
    accepted = [e for e in old if e["type"] == protocol.STEER_ACCEPTED]
    assert len(accepted) == 1
    assert accepted[0]["steer"]["previous_response_id"] == target
    assert accepted[0]["steer"]["id"].startswith("steer_")
    assert accepted[0]["steer"]["input"] == "[say]steered text[/say]"
    assert old[-1]["response"]["incomplete_details"] == {"reason": protocol.STEERED}
    assert old.index(accepted[0]) < len(old) - 1
    first = successor[0]["response"]
    assert successor[0]["type"] == protocol.CREATED
    assert first["previous_response_id"] == target
    assert first["instructions"] == "keep me"
    assert successor[-1]["type"] == protocol.COMPLETED
    assert text_of(successor) == "steered text"


async def test_it_steers_after_completion_by_starting_a_successor() -> None:
    async with running_server(steer_extension=True) as server, client_for(server) as ws:
        done = await ws.run("[say]finished[/say]")
        target = done[-1]["response"]["id"]
        await ws.send(
            {"type": protocol.STEER, "previous_response_id": target, "input": "[say]more[/say]"}
        )
        accepted = await ws.recv()
        successor = await ws.response()
    assert accepted["type"] == protocol.STEER_ACCEPTED
    assert successor[0]["response"]["previous_response_id"] == target
    assert text_of(successor) == "more"


async def test_it_fails_a_steer_for_an_unknown_response() -> None:
    async with running_server(steer_extension=True) as server, client_for(server) as ws:
        await ws.send({"type": protocol.STEER, "previous_response_id": "resp_x", "input": "y"})
        failed = await ws.recv()
    assert failed["type"] == protocol.STEER_FAILED
    assert failed["steer"] == {"previous_response_id": "resp_x", "input": "y"}
    assert failed["error"]["code"] == protocol.PREVIOUS_RESPONSE_NOT_FOUND


async def test_it_rejects_a_steer_without_input() -> None:
    async with running_server(steer_extension=True) as server, client_for(server) as ws:
        await ws.send({"type": protocol.STEER, "previous_response_id": "resp_x"})
        error = await ws.recv()
    assert error["error"]["code"] == protocol.MISSING_PARAMETER
    assert error["error"]["param"] == "input"


async def test_it_treats_steer_as_unknown_without_the_extension(ws: Client) -> None:
    await ws.send({"type": protocol.STEER, "previous_response_id": "resp_x", "input": "y"})
    error = await ws.recv()
    assert error["error"]["code"] == protocol.INVALID_VALUE
    assert error["error"]["param"] == "type"


async def test_a_steer_after_a_warm_up_generates() -> None:
    async with running_server(steer_extension=True) as server, client_for(server) as ws:
        warm = await ws.run("context", generate=False)
        target = warm[-1]["response"]["id"]
        await ws.send(
            {"type": protocol.STEER, "previous_response_id": target, "input": "[say]go[/say]"}
        )
        await ws.until(protocol.STEER_ACCEPTED)
        successor = await ws.response()
    assert successor[-1]["type"] == protocol.COMPLETED
    assert text_of(successor) == "go"
