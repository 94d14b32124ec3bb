"""``POST /v1/responses`` over HTTP/SSE: the socket's events as ``event:``/``data:`` pairs,
stateless (the whole history in each request), and the same refusals."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.modelserver.request_log import RequestLog
from tests.support.recording_engine import RecordingEngine

MODEL = "scripted"
SCRIPTS: dict[str, Any] = {
    "call": [[{"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n",
               "call_id": "call_h"}], "Round two."],
}
USER = {"type": "message", "role": "user", "content": "[script:call]"}


@pytest.fixture
async def server() -> AsyncIterator[SseModelServer]:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=20_000, ttft_s=0.0)
    async with SseModelServer(engine, model=MODEL, request_log=RequestLog()) as started:
        yield started


async def stream(server: SseModelServer, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of one streamed response; each ``event:`` line names its ``data``'s type."""
    body = {"model": MODEL, "input": items, "stream": True, "store": False}
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http, http.stream(
        "POST", "/responses", json=body
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "text/event-stream"
        text = (await answer.aread()).decode()
    events = []
    for block in text.strip().split("\n\n"):
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return events


async def test_a_streamed_response_sends_the_sockets_events(server: SseModelServer) -> None:
    events = await stream(server, [USER])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:3]] == [protocol.CREATED, protocol.IN_PROGRESS, protocol.OUTPUT_ITEM_ADDED]
    assert events[2]["item"]["type"] == "custom_tool_call" and events[2]["item"]["call_id"] == "call_h"
    assert events[-1]["type"] == protocol.COMPLETED
    assert events[-1]["response"]["output"] == [events[-2]["item"]]


async def test_the_whole_history_with_the_output_plays_round_two(server: SseModelServer) -> None:
    first = await stream(server, [USER])
    call = first[-1]["response"]["output"][0]
    answer = {"type": "custom_tool_call_output", "call_id": "call_h", "output": "ok"}
    second = await stream(server, [USER, call, answer])
    assert second[-1]["response"]["output"][0]["content"][0]["text"] == "Round two."
    log = server.request_log
    assert log is not None
    assert [entry.transport for entry in log.entries] == ["http", "http"]
    assert log.entries[-1].tool_outputs() == [answer]
    assert log.entries[-1].response_id == second[-1]["response"]["id"]


async def test_without_stream_the_final_response_object_comes_back(server: SseModelServer) -> None:
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http:
        answer = await http.post("/responses", json={"model": MODEL, "input": "[say]plain[/say]"})
    assert answer.status_code == 200
    response = answer.json()
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["output"][0]["content"][0]["text"] == "plain"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"model": MODEL, "input": "x", "previous_response_id": "resp_1"}, 400,
         {"code": "previous_response_not_found", "param": "previous_response_id"}),
        ({"model": MODEL, "input": [USER, {"type": "custom_tool_call", "call_id": "c", "name": "n", "input": ""}]},
         400, {"code": None, "param": "input", "message": "No tool output found for custom tool call c."}),
        ({"model": "other", "input": "x"}, 404, {"code": "model_not_found"}),
        ({"input": "x"}, 400, {"code": "missing_required_parameter", "param": "model"}),
    ],
)
async def test_refused_requests_get_a_json_error(server: SseModelServer, body: dict[str, Any], status: int,
                                                 error: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http:
        answer = await http.post("/responses", json=body)
        broken = await http.post("/responses", content=b"{", headers={"content-type": "application/json"})
    assert answer.status_code == status
    got = answer.json()["error"]
    assert {key: got[key] for key in error} == error
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json"


async def test_closing_the_stream_stops_the_engine(server: SseModelServer, caplog: pytest.LogCaptureFixture) -> None:
    engine = server.engine
    assert isinstance(engine, RecordingEngine)
    body = {"model": MODEL, "input": "[rate:500][say]" + "word " * 2000 + "[/say]", "stream": True}
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http, http.stream(
        "POST", "/responses", json=body
    ) as answer:
        async for line in answer.aiter_lines():
            if protocol.OUTPUT_TEXT_DELTA in line:
                break  # leaving the block closes the connection mid-answer
    async with asyncio.timeout(5):
        while engine.generations[-1].end is None:
            await asyncio.sleep(0.01)
    assert engine.generations[-1].end == "stopped"
    assert engine.generations[-1].tokens < 2000
    await asyncio.sleep(0.05)  # the handler notices the closed connection
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # a client leaving is no engine failure
