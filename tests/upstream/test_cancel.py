"""Cancel and steer by every strategy: the old turn yields nothing more, the old
generation really stops upstream (as the model server records it), and the new turn's
events are exactly its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.upstream import (
    CancelStrategy,
    Completed,
    ResponsesClient,
    TextDelta,
    open_client,
)
from tests.support.recording_engine import RecordingEngine, recording_engine
from tests.support.waits import eventually
from tests.upstream.helpers import (
    ALL_SOCKET_STRATEGIES,
    LONG_TEXT,
    MODEL,
    Session,
    base_url_of,
    client_config,
    collect,
    model_server,
    say,
    turn,
)

LONG = "[script:long][rate:300]"  # 800 tokens: over 2.5 s if nothing stops it


@asynccontextmanager
async def session(strategy: CancelStrategy) -> AsyncIterator[Session]:
    """A client whose profile picks ``strategy``, against the matching server mode."""
    openai_like = strategy is not CancelStrategy.NATIVE_CANCEL
    steer = strategy is CancelStrategy.NATIVE_STEER
    async with model_server(openai_like=openai_like, steer=steer) as server:
        proxy = await LoopProxy("127.0.0.1", server.port).start()
        config = client_config(
            proxy.base_url(), openai_like=openai_like,
            steer_models=frozenset({MODEL}) if steer else frozenset(),
            cancel_strategy=strategy if strategy is CancelStrategy.RECONNECT else None,
        )
        assert config.profile.cancel_strategy is strategy
        client = await open_client(config)
        assert isinstance(client, ResponsesClient)
        if client.profile.keeps_spare:
            await eventually(lambda: client.spare_ready)
        try:
            yield Session(client, recording_engine(server), proxy)
        finally:
            await client.close()
            await proxy.stop()


async def stopped_upstream(engine: RecordingEngine, prompt: str) -> None:
    """The server's one generation for ``prompt`` ended early: a stop reached it."""
    await eventually(lambda: [g.end for g in engine.asked(prompt)] == ["stopped"])
    assert engine.asked(prompt)[0].tokens < len(split_tokens(LONG_TEXT))


@pytest.mark.parametrize("strategy", ALL_SOCKET_STRATEGIES)
async def test_steer_yields_no_stale_event_and_stops_the_old_answer(
    strategy: CancelStrategy,
) -> None:
    async with session(strategy) as live:
        old = await live.client.start(turn(LONG))
        seen = await collect(old, limit=5)
        new = await live.client.steer(old, turn(say("fresh answer")))
        assert await collect(old) == []
        assert old.state == "cancelled"
        assert LONG_TEXT.startswith(old.text)
        assert old.text == "".join(e.text for e in seen if isinstance(e, TextDelta))
        events = await collect(new)
        final = events[-1]
        assert isinstance(final, Completed)
        assert new.text == "fresh answer"
        deltas = events[:-1]
        assert all(isinstance(e, TextDelta) and e.response_id == final.response_id
                   for e in deltas)
        await stopped_upstream(live.engine, LONG)


@pytest.mark.parametrize("strategy", ALL_SOCKET_STRATEGIES)
async def test_stop_ends_the_turn_and_the_next_turn_is_clean(strategy: CancelStrategy) -> None:
    async with session(strategy) as live:
        old = await live.client.start(turn(LONG))
        await collect(old, limit=3)
        await old.cancel()
        assert await collect(old) == []
        await stopped_upstream(live.engine, LONG)
        after = await live.client.start(turn(say("clean slate")))
        events = await collect(after)
        assert isinstance(events[-1], Completed)
        assert after.text == "clean slate"


async def test_hot_spare_sends_the_re_prompt_without_opening_a_socket() -> None:
    async with session(CancelStrategy.HOT_SPARE) as live:
        assert live.proxy.connections == 2  # the primary and its warm spare
        old = await live.client.start(turn(LONG))
        await collect(old, limit=2)
        new = await live.client.steer(old, turn(say("on the spare")))
        assert new.sent_at is not None
        assert live.proxy.connections == 2  # the re-prompt went out on the warm spare
        assert (await collect(new))[-1].__class__ is Completed
        await eventually(lambda: live.client.spare_ready)  # a new spare, warmed in the background
        assert live.proxy.connections == 3
        assert len(live.engine.warmups) == 3


async def test_steer_after_the_old_turn_finished_just_starts_the_new_one() -> None:
    async with session(CancelStrategy.HOT_SPARE) as live:
        old = await live.client.start(turn(say("short")))
        await collect(old)
        new = await live.client.steer(old, turn(say("next")))
        assert (await collect(new))[-1].__class__ is Completed
        assert new.text == "next"
        assert live.proxy.connections == 2  # nothing to cancel: no swap
        assert [g.end for g in live.engine.generations] == ["finished", "finished"]


async def test_a_cancel_before_the_response_started_still_stops_it() -> None:
    async with session(CancelStrategy.NATIVE_CANCEL) as live:
        prompt = "[script:long][rate:300][ttft:200]"
        old = await live.client.start(turn(prompt))
        new = await live.client.steer(old, turn(say("early steer")))
        assert await collect(old) == []
        assert (await collect(new))[-1].__class__ is Completed
        assert new.text == "early steer"
        # The server answers in order: the old response ended before the new one ran. Its
        # generation either never started or stopped before its first token.
        assert all(g.end == "stopped" and g.tokens == 0 for g in live.engine.asked(prompt))
        assert live.proxy.connections == 1  # cancelled in place, not by dropping the socket


async def test_a_rejected_steer_falls_back_to_a_plain_request_on_another_socket() -> None:
    # The profile claims steer support, the server has none: it rejects the message.
    async with model_server(openai_like=True, steer=False) as server:
        config = client_config(base_url_of(server), openai_like=True,
                               steer_models=frozenset({MODEL}))
        client = await open_client(config)
        try:
            old = await client.start(turn("[script:short][rate:50]"))
            await collect(old, limit=1)
            new = await client.steer(old, turn(say("fallback answer")))
            assert await collect(old) == []
            final = (await collect(new))[-1]
            assert isinstance(final, Completed)
            assert new.text == "fallback answer"
            assert new.resends == 1
        finally:
            await client.close()


@pytest.mark.parametrize("strategy", ALL_SOCKET_STRATEGIES)
async def test_it_tells_whether_a_steer_goes_out_without_waiting_on_the_network(strategy: CancelStrategy) -> None:
    """A warm socket (or spare) takes the re-prompt at once; the reconnect strategy opens a
    socket first. The Pilot announces the steer's events before a re-prompt that may wait."""
    async with session(strategy) as live:
        assert live.client.steers_at_once(None)  # a start: on the warm primary
        old = await live.client.start(turn(LONG))
        await collect(old, limit=3)
        assert live.client.steers_at_once(old) is (strategy is not CancelStrategy.RECONNECT)
        new = await live.client.steer(old, turn(say("fresh answer")))
        assert [e for e in await collect(new) if isinstance(e, Completed)]
    assert not live.client.steers_at_once(None)  # closed
