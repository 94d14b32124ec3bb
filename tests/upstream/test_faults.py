"""Faults while a response streams: an ``error`` event in the middle of it, and a server that
stops sending. Each ends the turn within its limit, and the next turn runs on a clean socket
(the frames the broken response might still send must never reach it)."""

from __future__ import annotations

import json
import time

import pytest

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, ErrorEvent, ResponsesClient, open_client
from spark_ide.upstream.connection import ResponsesConnection
from tests.support.waits import eventually
from tests.upstream.helpers import StallingProxy, client_config, collect, say, turn

# OpenAI documents two shapes for an `error` event (UPSTREAM.md); both end the response.
FLAT = {"type": "error", "code": "server_error", "message": "the model broke off", "param": None}
NESTED = {"type": "error", "status": 500,
          "error": {"type": "server_error", "code": "server_error", "message": "the model broke off"}}


@pytest.mark.parametrize("frame", [FLAT, NESTED], ids=["flat", "nested"])
async def test_an_error_event_mid_stream_ends_the_turn_and_the_socket_is_replaced(
    local_server: ModelServer, frame: dict[str, object]
) -> None:
    proxy = StallingProxy("127.0.0.1", local_server.port)
    await proxy.start()
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    assert isinstance(client, ResponsesClient)
    try:
        stream = await client.start(turn("[script:long][rate:200]"))
        await collect(stream, limit=2)
        broken = stream.handle.connection  # type: ignore[attr-defined]
        proxy.inject_text(json.dumps(frame))
        final = (await collect(stream))[-1]
        assert isinstance(final, ErrorEvent)
        assert (final.code, final.message, final.retryable) == ("server_error", "the model broke off", True)
        assert isinstance(broken, ResponsesConnection) and broken.faulted
        # Replaced in the background: the next turn finds a warm socket, and only its own text.
        await eventually(lambda: proxy.connections == 2)
        after = await client.start(turn(say("clean")))
        assert isinstance((await collect(after))[-1], Completed)
        assert after.text == "clean"
    finally:
        await client.close()
        await proxy.stop()


async def test_a_stall_mid_stream_ends_the_turn_within_the_stall_limit(local_server: ModelServer) -> None:
    proxy = StallingProxy("127.0.0.1", local_server.port)
    await proxy.start()
    config = client_config(proxy.base_url(), openai_like=False, idle_timeout_s=0.3)
    client = await open_client(config)
    try:
        stream = await client.start(turn("[script:long][rate:200]"))
        await collect(stream, limit=2)
        proxy.stall()
        stalled_at = time.monotonic()
        final = (await collect(stream))[-1]
        waited = time.monotonic() - stalled_at
        assert isinstance(final, ErrorEvent)
        assert (final.code, final.retryable) == ("timeout", True)
        assert "no event within 0.3 s" in final.message
        assert final.marks.first_byte_at is not None  # it stalled after answering: not a first-byte timeout
        # Not before the limit (a timer may fire a hair early). That it ended at all, on this
        # limit and not a later one, is the message above (collect gives up after 20 s).
        assert waited > 0.25
        after = await client.start(turn(say("unstuck")))
        assert isinstance((await collect(after))[-1], Completed)
        assert after.text == "unstuck"
    finally:
        await client.close()
        await proxy.stop()
