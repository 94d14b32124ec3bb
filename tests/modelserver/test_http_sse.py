"""The Chat Completions (HTTP/SSE) server over the scripted engine: what our SSE client reads,
keep-alive, errors, and the engine stopping when the client goes away."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.events import Completed, Incomplete, TextDelta
from spark_ide.upstream.request import Message, TurnRequest
from spark_ide.upstream.sse import ChatCompletionsClient
from tests.support.recording_engine import RecordingEngine

MODEL = "scripted"
KEY = "sk-test-sse"
LONG = " ".join(f"{i % 1000:03d}" for i in range(5000))


@pytest.fixture
async def server() -> AsyncIterator[SseModelServer]:
    engine = RecordingEngine({"long": LONG}, tokens_per_s=2000.0, ttft_s=0.0)
    async with SseModelServer(engine, model=MODEL, api_key=KEY) as started:
        yield started


def _http(server: SseModelServer, key: str | None = KEY) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(base_url=server.base_url(), headers=headers, timeout=10)


def _chat(text: str, **extra: object) -> dict[str, object]:
    return {"model": MODEL, "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": text}],
            **extra}


async def test_our_sse_client_reads_the_whole_answer(server: SseModelServer) -> None:
    config = ProviderConfig(provider="openai-compatible", base_url=server.base_url(), model=MODEL, api_key=KEY)
    client = ChatCompletionsClient(config)
    await client.connect()
    try:
        stream = await client.start(TurnRequest(instructions="rules", input=(Message("user", "[say]a b\nc d[/say]"),)))
        events = [event async for event in stream]
    finally:
        await client.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a b\nc d"
    last = events[-1]
    assert isinstance(last, Completed)
    assert last.usage is not None and last.usage.output_tokens == 4


async def test_a_max_tokens_cut_ends_with_finish_reason_length(server: SseModelServer) -> None:
    config = ProviderConfig(provider="openai-compatible", base_url=server.base_url(), model=MODEL, api_key=KEY)
    client = ChatCompletionsClient(config)
    try:
        request = TurnRequest(instructions="", input=(Message("user", "[say]a b c d e[/say]"),), max_output_tokens=2)
        events = [event async for event in await client.start(request)]
    finally:
        await client.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a b"
    assert isinstance(events[-1], Incomplete)


async def test_turns_reuse_one_keep_alive_connection(server: SseModelServer) -> None:
    async with _http(server) as http:
        assert (await http.get("/models")).json()["data"][0]["id"] == MODEL
        for n in range(3):
            async with http.stream("POST", "/chat/completions", json=_chat(f"[say]turn {n}[/say]", stream=True)) as r:
                assert r.headers["content-type"] == "text/event-stream"
                lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
            assert lines[-1] == "data: [DONE]"
            chunks = [json.loads(line[6:]) for line in lines[:-1]]
            assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == f"turn {n}"
            assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
            assert len({c["id"] for c in chunks}) == 1
        whole = (await http.post("/chat/completions", json=_chat("[say]all at once[/say]"))).json()
    assert whole["choices"][0]["message"]["content"] == "all at once"
    assert server.connections == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (_chat("[script:nope]", stream=True), 400, "script_not_found"),
        (_chat("[rate:fast]", stream=True), 400, "invalid_directive"),
        ({"model": MODEL, "stream": True}, 400, "missing_required_parameter"),
        ({**_chat("x"), "model": "other"}, 404, "model_not_found"),
        ({**_chat("x"), "stream": "yes"}, 400, "invalid_type"),
        ({**_chat("x"), "max_tokens": 0}, 400, "invalid_value"),
    ],
)
async def test_bad_requests_get_a_json_error(server: SseModelServer, body: dict[str, object], status: int,
                                             code: str) -> None:
    async with _http(server) as http:
        answer = await http.post("/chat/completions", json=body)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == code


async def test_bad_json_wrong_key_and_unknown_routes(server: SseModelServer) -> None:
    async with _http(server) as http:
        broken = await http.post("/chat/completions", content=b"{not json",
                                 headers={"content-type": "application/json"})
        assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json"
        assert (await http.get("/nowhere")).status_code == 404
        assert (await http.get("/chat/completions")).status_code == 405
    async with _http(server, key="sk-wrong") as http:
        assert (await http.post("/chat/completions", json=_chat("x"))).status_code == 401
    async with _http(server, key=None) as http:
        assert (await http.get("/models")).status_code == 401


async def test_closing_the_stream_stops_the_engine(server: SseModelServer) -> None:
    engine = server.engine
    assert isinstance(engine, RecordingEngine)
    async with _http(server) as http, http.stream("POST", "/chat/completions",
                                                 json=_chat("[script:long]", stream=True)) as r:
        async for line in r.aiter_lines():
            if '"content":"000' in line:
                break  # leaving the block closes the connection mid-answer
    async with asyncio.timeout(5):
        while engine.generations[-1].end is None:
            await asyncio.sleep(0.01)
    generation = engine.generations[-1]
    assert generation.end == "stopped"
    assert generation.tokens < 5000


async def test_our_sse_client_keeps_one_connection_for_many_turns(server: SseModelServer) -> None:
    # It reads each body to its end after [DONE]: httpx reuses a pooled connection only then.
    config = ProviderConfig(provider="openai-compatible", base_url=server.base_url(), model=MODEL, api_key=KEY)
    client = ChatCompletionsClient(config)
    await client.connect()
    try:
        for turn in range(3):
            request = TurnRequest(instructions="rules", input=(Message("user", f"[say]turn {turn}[/say]"),))
            stream = await client.start(request)
            events = [event async for event in stream]
            assert isinstance(events[-1], Completed)
    finally:
        await client.close()
    assert server.connections == 1
