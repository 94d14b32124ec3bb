from __future__ import annotations

from spark_ide import responses_protocol as protocol

from .protocol_client import Client, client_for, running_server, text_of, types_of

SLOW = "[rate:200][say]" + "word " * 400 + "[/say]"


async def started_response(ws: Client) -> str:
    await ws.create(SLOW)
    events = await ws.until(protocol.OUTPUT_TEXT_DELTA)
    return str(events[0]["response"]["id"])


async def test_it_ends_a_cancelled_response_incomplete(ws: Client) -> None:
    response_id = await started_response(ws)
    await ws.send({"type": protocol.CANCEL, "response_id": response_id})
    events = await ws.response()
    final = events[-1]
    assert final["type"] == protocol.INCOMPLETE
    assert final["response"]["id"] == response_id
    assert final["response"]["incomplete_details"] == {"reason": protocol.CANCELLED}
    assert final["response"]["output"][0]["status"] == "incomplete"
    assert set(types_of(events[:-1])) <= {protocol.OUTPUT_TEXT_DELTA}


async def test_it_sends_no_delta_after_the_cancel_reply(ws: Client) -> None:
    response_id = await started_response(ws)
    await ws.send({"type": protocol.CANCEL, "response_id": response_id})
    events = await ws.response()
    partial = events[-1]["response"]["output"][0]["content"][0]["text"]
    # Nothing follows the terminal event: the next thing on the socket is the next response.
    after = await ws.run("[say]next[/say]")
    assert after[0]["type"] == protocol.CREATED
    assert text_of(after) == "next"
    assert len(partial) < len(SLOW)


async def test_it_cancels_the_running_response_without_an_id(ws: Client) -> None:
    await started_response(ws)
    await ws.send({"type": protocol.CANCEL})
    events = await ws.response()
    assert events[-1]["response"]["incomplete_details"] == {"reason": protocol.CANCELLED}


async def test_it_answers_a_cancel_that_raced_completion_with_an_error(ws: Client) -> None:
    done = await ws.run("[say]quick[/say]")
    response_id = done[-1]["response"]["id"]
    await ws.send({"type": protocol.CANCEL, "response_id": response_id})
    error = await ws.recv()
    assert error["type"] == protocol.ERROR
    assert error["error"]["code"] == protocol.CANCEL_NOT_ACTIVE
    assert error["error"]["param"] == "response_id"
    assert (await ws.run("[say]still serving[/say]"))[-1]["type"] == protocol.COMPLETED


async def test_it_answers_a_cancel_for_an_unknown_id_with_response_not_found(ws: Client) -> None:
    await ws.send({"type": protocol.CANCEL, "response_id": "resp_nope"})
    error = await ws.recv()
    assert error["status"] == 404
    assert error["error"]["code"] == protocol.RESPONSE_NOT_FOUND


async def test_it_answers_a_cancel_with_nothing_running(ws: Client) -> None:
    await ws.send({"type": protocol.CANCEL})
    error = await ws.recv()
    assert error["error"]["code"] == protocol.CANCEL_NOT_ACTIVE


async def test_it_treats_cancel_as_unknown_without_the_extension() -> None:
    async with running_server(cancel_extension=False) as server, client_for(server) as ws:
        await ws.create("[rate:2000][say]" + "go " * 100 + "[/say]")
        await ws.until(protocol.OUTPUT_TEXT_DELTA)
        await ws.send({"type": protocol.CANCEL})
        events = await ws.until(protocol.COMPLETED)
        error = await ws.recv()
    # Like OpenAI: the response runs to the end, then the unknown type is reported.
    assert events[-1]["response"]["status"] == "completed"
    assert error["error"]["code"] == protocol.INVALID_VALUE
    assert error["error"]["param"] == "type"


async def test_it_cancels_a_response_before_its_first_token(ws: Client) -> None:
    await ws.create("[ttft:5000][say]never said[/say]")
    created = await ws.recv()
    await ws.send({"type": protocol.CANCEL, "response_id": created["response"]["id"]})
    events = await ws.response()
    assert events[-1]["response"]["incomplete_details"] == {"reason": protocol.CANCELLED}
    assert protocol.OUTPUT_TEXT_DELTA not in types_of(events)
    assert text_of(events) == ""


async def test_a_warm_up_cannot_be_cancelled(ws: Client) -> None:
    await ws.create("context", generate=False)
    created = await ws.recv()
    await ws.send({"type": protocol.CANCEL, "response_id": created["response"]["id"]})
    events = await ws.response()
    error = await ws.recv()
    assert events[-1]["type"] == protocol.COMPLETED
    assert error["error"]["code"] == protocol.CANCEL_NOT_ACTIVE
    assert error["error"]["message"].endswith("is not in progress; nothing to cancel.")
