from __future__ import annotations

from spark_ide import responses_protocol as protocol

from .fake_engines import EchoEngine
from .protocol_client import client_for, running_server, text_of


async def test_it_rebuilds_the_conversation_from_previous_response_id() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        first = await ws.run("one", instructions="rules")
        second = await ws.run("two", previous_response_id=first[-1]["response"]["id"])
    assert text_of(first) == "system: rules\nuser: one\n"
    # Instructions are not inherited (as with OpenAI); the earlier answer is.
    assert text_of(second) == ("user: one\nassistant: system: rules\nuser: one\n\nuser: two\n")
    assert second[-1]["response"]["previous_response_id"] == first[-1]["response"]["id"]


async def test_it_chains_three_turns() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        first = await ws.run("a")
        second = await ws.run("b", previous_response_id=first[-1]["response"]["id"])
        third = await ws.run("c", previous_response_id=second[-1]["response"]["id"])
    assert text_of(third).startswith("user: a\nassistant: user: a\n\nuser: b\n")
    assert text_of(third).endswith("user: c\n")


async def test_it_answers_previous_response_not_found_for_an_unknown_id() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        events = await ws.run("x", previous_response_id="resp_unknown")
    assert events == [
        {
            "type": "error",
            "status": 400,
            "error": {
                "type": "invalid_request_error",
                "code": "previous_response_not_found",
                "message": "Previous response with id 'resp_unknown' not found.",
                "param": "previous_response_id",
            },
        }
    ]


async def test_it_only_remembers_the_last_response() -> None:
    async with running_server(EchoEngine()) as server, client_for(server) as ws:
        first = await ws.run("a")
        await ws.run("b")
        events = await ws.run("c", previous_response_id=first[-1]["response"]["id"])
    assert events[-1]["error"]["code"] == protocol.PREVIOUS_RESPONSE_NOT_FOUND


async def test_it_forgets_responses_when_the_socket_closes() -> None:
    async with running_server(EchoEngine()) as server:
        async with client_for(server) as ws:
            first = await ws.run("a")
        async with client_for(server) as ws:
            events = await ws.run("b", previous_response_id=first[-1]["response"]["id"])
    assert events[-1]["error"]["code"] == protocol.PREVIOUS_RESPONSE_NOT_FOUND
