"""A provider that is down, refuses us, or never answers gives a clear error, never a hang."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import ErrorEvent, UpstreamError, open_client
from tests.support.waits import eventually
from tests.upstream.helpers import (
    API_KEY,
    base_url_of,
    client_config,
    collect,
    model_server,
    say,
    turn,
)


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def black_hole() -> AsyncIterator[int]:
    """Accepts TCP connections and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield int(server.sockets[0].getsockname()[1])
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_it_reports_a_provider_that_is_not_listening() -> None:
    config = client_config(f"http://127.0.0.1:{unused_port()}/v1", openai_like=True)
    with pytest.raises(UpstreamError) as caught:
        await asyncio.wait_for(open_client(config), 20)
    assert caught.value.code == "provider_unavailable"
    assert "after 5 tries" in caught.value.message
    assert API_KEY not in str(caught.value)


async def test_it_gives_up_on_a_provider_that_never_answers(black_hole: int) -> None:
    config = client_config(f"http://127.0.0.1:{black_hole}/v1", openai_like=False,
                           connect_timeout_s=0.2)
    with pytest.raises(UpstreamError) as caught:
        await asyncio.wait_for(open_client(config), 20)
    assert caught.value.code == "provider_unavailable"


async def test_it_reports_a_refused_key_without_retrying_or_showing_it(
    openai_like_server: ModelServer,
) -> None:
    wrong = "sk-wrong-key-that-must-not-leak"
    config = client_config(base_url_of(openai_like_server), openai_like=True, api_key=wrong)
    with pytest.raises(UpstreamError) as caught:
        await asyncio.wait_for(open_client(config), 20)
    assert caught.value.code == "authentication_failed"
    assert wrong not in str(caught.value)


async def test_it_reports_an_unknown_model_at_warm_up(local_server: ModelServer) -> None:
    config = client_config(base_url_of(local_server), openai_like=False, model="no-such-model")
    with pytest.raises(UpstreamError) as caught:
        await asyncio.wait_for(open_client(config), 20)
    assert caught.value.code == protocol.MODEL_NOT_FOUND


async def test_a_turn_raises_when_the_provider_went_down_between_turns() -> None:
    async with model_server(openai_like=False) as server:
        client = await open_client(client_config(base_url_of(server), openai_like=False))
    try:
        with pytest.raises(UpstreamError) as caught:
            await asyncio.wait_for(client.start(turn(say("anyone?"))), 20)
        assert caught.value.code == "provider_unavailable"
    finally:
        await client.close()


async def test_a_running_turn_ends_with_an_error_when_the_provider_goes_down() -> None:
    async with model_server(openai_like=False) as server:
        client = await open_client(client_config(base_url_of(server), openai_like=False))
        stream = await client.start(turn(say("never", ttft_ms=2000)))
        await eventually(lambda: stream.first_byte_at is not None)
    try:
        events = await collect(stream)
        assert len(events) == 1
        assert isinstance(events[0], ErrorEvent)
        assert events[0].code == "provider_unavailable"
        assert events[0].retryable
    finally:
        await client.close()
