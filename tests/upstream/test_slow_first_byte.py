"""A slow first byte is measured, and one beyond the timeout ends the turn cleanly."""

from __future__ import annotations

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, ErrorEvent, open_client
from tests.upstream.helpers import ProxyFactory, client_config, collect, say, turn


async def test_it_waits_for_a_slow_first_byte_and_marks_it(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        proxy.server_delay_s = 0.3
        stream = await client.start(turn(say("slow start")))
        events = await collect(stream)
        final = events[-1]
        assert isinstance(final, Completed)
        marks = final.marks
        assert marks.first_byte_at is not None and marks.first_token_at is not None
        assert marks.first_byte_at - marks.sent_at >= 0.3  # the delay we injected, at least
        assert marks.first_token_at >= marks.first_byte_at
    finally:
        await client.close()


async def test_a_first_byte_beyond_the_timeout_ends_the_turn_without_polluting_the_next(
    local_server: ModelServer, proxy_factory: ProxyFactory
) -> None:
    proxy = await proxy_factory(local_server)
    config = client_config(proxy.base_url(), openai_like=False, first_byte_timeout_s=0.2)
    client = await open_client(config)
    try:
        proxy.server_delay_s = 1.0
        stream = await client.start(turn(say("too late")))
        events = await collect(stream)
        assert len(events) == 1
        assert isinstance(events[0], ErrorEvent)
        assert events[0].code == "timeout"
        proxy.server_delay_s = 0.0
        after = await client.start(turn(say("on time")))
        assert isinstance((await collect(after))[-1], Completed)
        assert after.text == "on time"
    finally:
        await client.close()
