"""The Chat Completions SSE adapter: normalised events, finish reasons, error mapping."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.upstream import (
    ChatCompletionsClient,
    Completed,
    ErrorEvent,
    Incomplete,
    ProviderConfig,
    TextDelta,
    Transport,
    UpstreamError,
    open_client,
)
from tests.upstream.helpers import collect, turn
from tests.upstream.sse_fixtures import chat_server, chunk, sse_body

KEY = "sk-compat-secret-999"


def config(**overrides: object) -> ProviderConfig:
    fields: dict[str, object] = {"provider": "openai-compatible",
                                 "base_url": "http://llm.test/v1", "model": "llama"}
    fields.update(overrides)
    return ProviderConfig(**fields)  # type: ignore[arg-type]


async def run_turn(transport: httpx.MockTransport, **overrides: object) -> list[object]:
    client = await open_client(config(**overrides), http_transport=transport)
    try:
        assert client.transport is Transport.CHAT_SSE
        return list(await collect(await client.start(turn("hi"))))
    finally:
        await client.close()


async def test_it_streams_deltas_and_completes() -> None:
    seen: list[httpx.Request] = []
    body = sse_body([chunk("Hel"), chunk("lo"), chunk(finish="stop")])
    events = await run_turn(chat_server(body, seen=seen), api_key=KEY)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    final = events[-1]
    assert isinstance(final, Completed)
    assert final.response_id == "chatcmpl-1"
    assert final.marks.first_token_at is not None
    post = seen[-1]
    assert post.url.path == "/v1/chat/completions"
    assert post.headers["authorization"] == f"Bearer {KEY}"
    sent = json.loads(post.content)
    assert sent["stream"] is True and sent["model"] == "llama"


async def test_it_maps_a_length_finish_to_incomplete() -> None:
    events = await run_turn(chat_server(sse_body([chunk("a"), chunk(finish="length")])))
    assert isinstance(events[-1], Incomplete)
    assert events[-1].reason == protocol.MAX_OUTPUT_TOKENS


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [(401, "authentication_failed", False), (404, "not_found", False),
     (429, "rate_limited", True), (503, "server_error", True), (400, "bad_request", False)],
)
async def test_it_maps_http_errors(status: int, code: str, retryable: bool) -> None:
    body = json.dumps({"error": {"message": "nope"}}).encode()
    events = await run_turn(chat_server(body, status=status))
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.retryable) == (code, retryable)
    assert "nope" in error.message


async def test_it_reports_an_error_chunk_mid_stream() -> None:
    body = sse_body([chunk("a"), {"error": {"code": "overloaded", "message": "busy"}}])
    events = await run_turn(chat_server(body))
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].code == "overloaded"


@pytest.mark.parametrize("bad", ["{oops", "[1]"])
async def test_it_rejects_malformed_sse_data(bad: str) -> None:
    events = await run_turn(chat_server(sse_body([chunk("a"), bad])))
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].code == "protocol_error"


async def test_it_reports_a_stream_cut_before_done() -> None:
    events = await run_turn(chat_server(sse_body([chunk("a")], done=False)))
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].code == "connection_lost"


async def test_it_reports_an_unreachable_server_at_connect() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(UpstreamError) as caught:
        await open_client(config(api_key=KEY), http_transport=httpx.MockTransport(refuse))
    assert caught.value.code == "provider_unavailable"
    assert KEY not in str(caught.value)


async def test_it_refuses_turns_after_close() -> None:
    client = ChatCompletionsClient(config(), http_transport=chat_server(b""))
    await client.close()
    with pytest.raises(UpstreamError) as caught:
        await client.start(turn("hi"))
    assert caught.value.code == "client_closed"


async def test_closing_the_client_ends_a_running_turn_with_client_closed() -> None:
    async def trickle() -> AsyncIterator[bytes]:
        yield sse_body([chunk("first")], done=False)
        await asyncio.sleep(30)  # a model that is still writing
        yield b""

    def slow_model(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": []})
        return httpx.Response(200, content=trickle(),
                              headers={"content-type": "text/event-stream"})

    client = await open_client(config(), http_transport=httpx.MockTransport(slow_model))
    stream = await client.start(turn("hi"))
    first = await collect(stream, limit=1)
    assert isinstance(first[0], TextDelta)
    await client.close()
    rest = await collect(stream)
    assert len(rest) == 1
    assert isinstance(rest[0], ErrorEvent)
    assert rest[0].code == "client_closed"
