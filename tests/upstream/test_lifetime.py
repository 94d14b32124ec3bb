"""The provider's connection lifetime (60 minutes on OpenAI; shortened here): rollover
mid-session, whether the server ends the socket or the client rolls over first."""

from __future__ import annotations

import asyncio

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, ResponsesClient, open_client
from tests.support.waits import eventually
from tests.upstream.helpers import (
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


async def test_it_rolls_over_before_the_limit_when_it_knows_the_lifetime(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    proxy = await proxy_factory(local_server)
    config = client_config(proxy.base_url(), openai_like=False,
                           connection_lifetime_s=1.0, rollover_margin_s=0.5)
    client = await open_client(config)
    try:
        await asyncio.sleep(0.6)
        stream = await client.start(turn(say("fresh socket")))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.resends == 0
        assert proxy.connections == 2  # the turn went out on a new socket
    finally:
        await client.close()
