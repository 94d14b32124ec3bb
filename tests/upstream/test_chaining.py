"""previous_response_id when the socket holds it; full context otherwise, retried once."""

from __future__ import annotations

from dataclasses import replace

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, Message, TurnRequest, open_client
from tests.support.recording_engine import recording_engine
from tests.support.waits import eventually
from tests.upstream.helpers import ProxyFactory, base_url_of, client_config, collect, say, turn


def follow_up(previous: str | None, first: str, answer: str, text: str) -> TurnRequest:
    new = (Message("user", text),)
    history = (Message("user", first), Message("assistant", answer))
    return TurnRequest(instructions="You are a test.", input=new, previous_response_id=previous,
                       full_context=history + new)


async def test_it_chains_on_the_socket_that_holds_the_previous_response(
    local_server: ModelServer,
) -> None:
    client = await open_client(client_config(base_url_of(local_server), openai_like=False))
    try:
        first = await client.start(turn(say("one")))
        done = (await collect(first))[-1]
        assert isinstance(done, Completed)
        second = await client.start(follow_up(done.response_id, say("one"), "one", say("two")))
        events = await collect(second)
        assert isinstance(events[-1], Completed)
        assert second.chained
        assert second.resends == 0
        assert second.text == "two"
        # Usage counts the history the server rebuilt from the chain.
        assert events[-1].usage is not None and done.usage is not None
        assert events[-1].usage.input_tokens > done.usage.input_tokens
    finally:
        await client.close()


async def test_it_sends_full_context_after_a_reconnect(
    local_server: ModelServer, proxy_factory: ProxyFactory,
) -> None:
    proxy = await proxy_factory(local_server)
    client = await open_client(client_config(proxy.base_url(), openai_like=False))
    try:
        done = (await collect(await client.start(turn(say("one")))))[-1]
        assert isinstance(done, Completed)
        proxy.cut_all()
        # The client reopens and warms a socket: the server answers a second warm-up.
        await eventually(lambda: len(recording_engine(local_server).warmups) == 2)
        assert proxy.connections == 2
        second = await client.start(follow_up(done.response_id, say("one"), "one", say("two")))
        events = await collect(second)
        assert isinstance(events[-1], Completed)
        assert not second.chained
        assert second.text == "two"
    finally:
        await client.close()


async def test_it_retries_once_with_full_context_on_previous_response_not_found(
    local_server: ModelServer,
) -> None:
    # store=True makes the client trust any id; the server only knows its socket's last one.
    config = replace(client_config(base_url_of(local_server), openai_like=False), store=True)
    client = await open_client(config)
    try:
        stream = await client.start(follow_up("resp_unknown", say("one"), "one", say("two")))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.text == "two"
        assert stream.resends == 1
        assert not stream.chained
    finally:
        await client.close()
