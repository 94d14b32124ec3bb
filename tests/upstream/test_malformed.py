"""Malformed upstream events end the turn with protocol_error; the session recovers."""

from __future__ import annotations

import json

import pytest

from benchmarks.loopproxy import server_frame
from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, ErrorEvent, ResponsesClient, open_client
from tests.upstream.helpers import ProxyFactory, client_config, collect, say, turn


@pytest.mark.parametrize(
    "garbage",
    ["{not json", json.dumps(["a", "list"]),
     json.dumps({"type": protocol.OUTPUT_TEXT_DELTA, "delta": 42})],
)
async def test_a_malformed_event_ends_the_turn_and_the_next_turn_is_clean(
    local_server: ModelServer, proxy_factory: ProxyFactory, garbage: str
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    assert isinstance(client, ResponsesClient)
    try:
        stream = await client.start(turn("[script:long][rate:200]"))
        await collect(stream, limit=2)
        proxy.inject_text(garbage)
        events = await collect(stream)
        assert isinstance(events[-1], ErrorEvent)
        assert events[-1].code == "protocol_error"
        after = await client.start(turn(say("recovered")))
        final = (await collect(after))[-1]
        assert isinstance(final, Completed)
        assert after.text == "recovered"
        assert proxy.connections == 2  # the suspect socket was replaced
    finally:
        await client.close()


async def test_an_unknown_event_type_is_ignored(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        stream = await client.start(turn(say("keeps going", rate=100)))
        await collect(stream, limit=1)
        proxy.inject_text(json.dumps({"type": "response.reasoning_summary.delta", "delta": "x"}))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.text == "keeps going"
    finally:
        await client.close()


def _delta_frame(text: str) -> bytes:
    return json.dumps({"type": protocol.OUTPUT_TEXT_DELTA, "delta": text}).encode()


async def test_a_fragmented_message_and_the_whole_ones_after_it_keep_their_order(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    """Whole text messages are handed on as they are parsed; a fragmented one takes
    websockets' queue, and the messages right behind it must not overtake it."""
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        stream = await client.start(turn(say("one two three four five six", rate=100)))
        await collect(stream, limit=1)
        first = _delta_frame("<A>")
        proxy.inject_frames([
            server_frame(0x1, first[:10], fin=False), server_frame(0x0, first[10:]),
            server_frame(0x1, _delta_frame("<B>")), server_frame(0x1, _delta_frame("<C>")),
        ])
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert "<A><B><C>" in stream.text
        assert stream.text.replace("<A><B><C>", "") == "one two three four five six"
    finally:
        await client.close()


@pytest.mark.parametrize(
    "frame", [server_frame(0x1, b'{"type": "response.output_text.delta", "delta": "\xff\xfe"}'),
              server_frame(0x2, _delta_frame("binary"))],
    ids=["text-not-utf8", "binary"],
)
async def test_a_frame_that_is_not_utf8_text_ends_the_turn_and_the_next_turn_is_clean(
    local_server: ModelServer, proxy_factory: ProxyFactory, frame: bytes
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        stream = await client.start(turn("[script:long][rate:200]"))
        await collect(stream, limit=2)
        proxy.inject_frames([frame])
        events = await collect(stream)
        assert isinstance(events[-1], ErrorEvent)
        assert events[-1].retryable
        after = await client.start(turn(say("recovered")))
        assert isinstance((await collect(after))[-1], Completed)
        assert after.text == "recovered"
        assert proxy.connections == 2
    finally:
        await client.close()
