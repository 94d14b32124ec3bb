"""Function tool calls over Chat Completions (HTTP/SSE): ``tool_calls`` chunks, the
assistant and ``tool`` messages of a follow-up, and the chains refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.modelserver.request_log import RequestLog
from tests.support.recording_engine import RecordingEngine

MODEL = "scripted"
ARGS = {"input": "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** End Patch\n"}
SCRIPTS: dict[str, Any] = {
    "two": [["Patching.",
             {"type": "function_call", "name": "apply_patch", "arguments": ARGS, "call_id": "call_1"},
             {"type": "function_call", "name": "read_file", "arguments": {"path": "a.py"}, "call_id": "call_2"}],
            "All done."],
    "custom": [[{"type": "custom_tool_call", "name": "apply_patch", "input": "x"}]],
}
FIRST = {"role": "user", "content": "[script:two]"}
CALLS: dict[str, Any] = {"role": "assistant", "content": "Patching.", "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "apply_patch", "arguments": json.dumps(ARGS)}},
    {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
]}


@pytest.fixture
async def server() -> AsyncIterator[SseModelServer]:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=20_000, ttft_s=0.0)
    async with SseModelServer(engine, model=MODEL, request_log=RequestLog()) as started:
        yield started


async def stream(server: SseModelServer, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http, http.stream(
        "POST", "/chat/completions", json={"model": MODEL, "messages": messages, "stream": True}
    ) as answer:
        assert answer.status_code == 200
        lines = [line async for line in answer.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


async def post(server: SseModelServer, messages: list[dict[str, Any]]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url(), timeout=10) as http:
        return await http.post("/chat/completions", json={"model": MODEL, "messages": messages})


async def test_function_calls_stream_as_tool_calls_chunks(server: SseModelServer) -> None:
    chunks = await stream(server, [FIRST])
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    assert "".join(d.get("content") or "" for d in deltas) == "Patching."
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    openings = [call for call in calls if "id" in call]
    assert openings == [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "apply_patch", "arguments": ""}},
        {"index": 1, "id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": ""}},
    ]
    fragments = [call for call in calls if "id" not in call]
    assert all(set(call) == {"index", "function"} and set(call["function"]) == {"arguments"} for call in fragments)
    for index, expected in enumerate((ARGS, {"path": "a.py"})):
        text = "".join(call["function"]["arguments"] for call in fragments if call["index"] == index)
        assert json.loads(text) == expected
    # Content first, then each call opened before its fragments.
    first_call = next(i for i, d in enumerate(deltas) if "tool_calls" in d)
    assert all("tool_calls" not in d for d in deltas[:first_call])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_the_whole_answer_carries_the_calls(server: SseModelServer) -> None:
    answer = (await post(server, [FIRST])).json()
    assert answer["choices"][0] == {"index": 0, "message": {"role": "assistant", **{k: CALLS[k] for k in (
        "content", "tool_calls")}}, "finish_reason": "tool_calls"}
    assert [json.loads(c["function"]["arguments"]) for c in answer["choices"][0]["message"]["tool_calls"]] == [
        ARGS, {"path": "a.py"}]


async def test_tool_messages_answer_the_calls_and_round_two_plays(server: SseModelServer) -> None:
    tools: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": "call_1", "content": "applied"},
             {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "x = 1\n"}]}]
    chunks = await stream(server, [FIRST, CALLS, *tools])
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "All done."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    log = server.request_log
    assert log is not None
    assert log.entries[-1].tool_outputs() == tools
    assert log.entries[-1].response_id == chunks[0]["id"]


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([FIRST, CALLS, {"role": "tool", "tool_call_id": "call_1", "content": "ok"}],
         "No tool output found for function call call_2."),
        ([FIRST, {"role": "tool", "tool_call_id": "call_9", "content": "ok"}],
         "No tool call found for function call output with call_id call_9."),
    ],
)
async def test_a_broken_chain_is_refused(server: SseModelServer, messages: list[dict[str, Any]],
                                         message: str) -> None:
    answer = await post(server, messages)
    assert answer.status_code == 400
    assert answer.json() == {"error": {"type": "invalid_request_error", "code": None, "message": message,
                                       "param": "messages"}}


async def test_a_tool_message_without_its_call_id_is_a_bad_request(server: SseModelServer) -> None:
    answer = await post(server, [FIRST, {"role": "tool", "content": "ok"}])
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "messages[1].tool_call_id"


async def test_a_custom_tool_call_cannot_be_played_over_chat(server: SseModelServer) -> None:
    answer = await post(server, [{"role": "user", "content": "[script:custom]"}])
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "unsupported_tool_call"
