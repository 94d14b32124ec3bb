"""The socket is open and warm before the first prompt; turns reuse it."""

from __future__ import annotations

import logging

import pytest

from spark_ide.modelserver.engine import Message
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import (
    Completed,
    ErrorEvent,
    ResponsesClient,
    TextDelta,
    Transport,
    UpstreamError,
    open_client,
)
from tests.support.recording_engine import recording_engine
from tests.support.waits import eventually
from tests.upstream.helpers import ProxyFactory, base_url_of, client_config, collect, say, turn


async def test_it_opens_and_warms_the_socket_before_the_first_prompt(
    local_server: ModelServer, proxy_factory: ProxyFactory,
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False),
                               warmup_instructions="edit format here")
    try:
        assert client.transport is Transport.RESPONSES_WS
        assert proxy.connections == 1
        # Before any prompt, the server was asked to get the instructions ready, and only that.
        (warmup,) = recording_engine(local_server).warmups
        assert warmup.messages == (Message("system", "edit format here"),)
        assert recording_engine(local_server).generations == []
    finally:
        await client.close()


async def test_it_streams_a_turn_on_the_warm_socket_with_timing_marks(
    local_server: ModelServer, proxy_factory: ProxyFactory,
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        events = await collect(await client.start(turn(say("hello there world"))))
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hello there world"
        final = events[-1]
        assert isinstance(final, Completed)
        assert final.response_id is not None and final.response_id.startswith("resp_")
        assert final.usage is not None and final.usage.output_tokens == 6
        marks = final.marks
        assert marks.first_byte_at is not None and marks.first_token_at is not None
        assert marks.sent_at <= marks.first_byte_at <= marks.first_token_at <= marks.received_at
        assert all(e.marks.sent_at == marks.sent_at for e in events)
        second = await collect(await client.start(turn(say("again"))))
        assert isinstance(second[-1], Completed)
        assert proxy.connections == 1  # one socket for the whole session
    finally:
        await client.close()


async def test_it_keeps_a_warm_hot_spare_for_the_openai_profile(
    openai_like_server: ModelServer, proxy_factory: ProxyFactory,
) -> None:
    proxy = await proxy_factory(openai_like_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=True))
    try:
        assert isinstance(client, ResponsesClient)
        await eventually(lambda: client.spare_ready)
        assert proxy.connections == 2
        assert len(recording_engine(openai_like_server).warmups) == 2  # both sockets warmed
    finally:
        await client.close()


async def test_it_sends_the_beta_header_and_bearer_to_openai_only(
    openai_like_server: ModelServer, local_server: ModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="spark_ide.modelserver.wire")
    client = await open_client(client_config(base_url_of(openai_like_server), openai_like=True))
    await client.close()
    upgrades = [r.getMessage() for r in caplog.records if r.name == "spark_ide.modelserver.wire"]
    assert "< OpenAI-Beta: responses_websockets=2026-02-06" in upgrades
    assert "< Authorization: Bearer ***" in upgrades  # the server's log redacts the key
    caplog.clear()
    client = await open_client(client_config(base_url_of(local_server), openai_like=False))
    await client.close()
    upgrades = [r.getMessage() for r in caplog.records if r.name == "spark_ide.modelserver.wire"]
    assert any(line.startswith("< GET /v1/responses") for line in upgrades)
    assert not any("OpenAI-Beta" in line or "Authorization" in line for line in upgrades)


async def test_closing_the_client_ends_a_running_turn_with_client_closed(
    local_server: ModelServer,
) -> None:
    client = await open_client(client_config(base_url_of(local_server), openai_like=False))
    stream = await client.start(turn("[script:long][rate:100]"))
    await collect(stream, limit=1)
    await client.close()
    events = await collect(stream)
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent)
    assert events[0].code == "client_closed"
    with pytest.raises(UpstreamError) as caught:
        await client.start(turn(say("too late")))
    assert caught.value.code == "client_closed"
