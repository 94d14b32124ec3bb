"""The provider's connection lifetime (60 minutes on OpenAI; shortened here): rollover
mid-session, whether the server ends the socket or the client rolls over first."""

from __future__ import annotations

import asyncio

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, ErrorEvent, ResponsesClient, open_client
from tests.support.waits import eventually
from tests.upstream.helpers import (
    LONG_TEXT,
    ProxyFactory,
    base_url_of,
    client_config,
    collect,
    model_server,
    say,
    turn,
)


async def test_it_continues_on_a_new_socket_after_the_server_ends_an_idle_one() -> None:
    async with model_server(openai_like=True, lifetime_s=0.5) as server:
        proxy = await LoopProxy("127.0.0.1", server.port).start()
        client = await open_client(client_config(proxy.base_url(), openai_like=True))
        assert isinstance(client, ResponsesClient)
        try:
            await eventually(lambda: client.spare_ready)
            first = await client.start(turn(say("before the limit")))
            assert isinstance((await collect(first))[-1], Completed)
            # The server ends both sockets (primary and spare); the client opens two new ones.
            await eventually(lambda: proxy.connections >= 4)
            second = await client.start(turn(say("after the limit")))
            events = await collect(second)
            assert isinstance(events[-1], Completed)
            assert second.text == "after the limit"
        finally:
            await client.close()
            await proxy.stop()


async def test_it_resends_a_turn_cut_by_the_lifetime_limit_before_any_output() -> None:
    async with model_server(openai_like=True, lifetime_s=1.0) as server:
        client = await open_client(client_config(base_url_of(server), openai_like=True))
        try:
            await asyncio.sleep(0.6)
            # The limit (at 1.0 s) falls inside this turn's 600 ms wait for its first token.
            stream = await client.start(turn(say("rolled over", ttft_ms=600)))
            events = await collect(stream)
            assert isinstance(events[-1], Completed)
            assert stream.text == "rolled over"
            assert stream.resends >= 1
        finally:
            await client.close()


async def test_it_warms_a_new_socket_before_the_limit_and_the_next_turn_uses_it(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    proxy = await proxy_factory(local_server)
    # Usable for 0.75 s; its replacement starts warming a margin earlier, at 0.5 s.
    config = client_config(proxy.base_url(), openai_like=False,
                           connection_lifetime_s=1.0, rollover_margin_s=0.25)
    client = await open_client(config)
    assert isinstance(client, ResponsesClient)
    try:
        await asyncio.sleep(0.8)  # past the old socket's usable life
        assert proxy.connections == 2  # the new one was opened in the background, no turn waiting
        stream = await client.start(turn(say("fresh socket")))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.resends == 0
        assert proxy.connections == 2  # the turn went out on the socket warmed in advance
        marks = events[-1].marks
        assert marks.first_byte_at is not None and marks.first_byte_at - marks.sent_at < 0.2  # no handshake
    finally:
        await client.close()


async def test_a_turn_running_at_the_limit_ends_with_a_clear_error_and_the_next_turn_works() -> None:
    async with model_server(openai_like=True, lifetime_s=0.6) as server:
        client = await open_client(client_config(base_url_of(server), openai_like=True))
        try:
            # 800 tokens at 1,000/s: the server's limit cuts it mid-answer.
            stream = await client.start(turn("[script:long]"))
            events = await collect(stream)
            final = events[-1]
            assert isinstance(final, ErrorEvent)
            assert final.code == "connection_expired" and final.retryable
            assert "lifetime limit" in final.message
            assert 0 < len(stream.text) < len(LONG_TEXT)
            after = await client.start(turn(say("on a new socket")))
            assert isinstance((await collect(after))[-1], Completed)
            assert after.text == "on a new socket"
        finally:
            await client.close()
