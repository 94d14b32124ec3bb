"""Cancel and steer by every strategy: the old turn yields nothing more, the old
generation really stops upstream, and the new turn's events are exactly its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from spark_ide.upstream import (
    CancelStrategy,
    Completed,
    ResponsesClient,
    TextDelta,
    open_client,
)
from tests.upstream.helpers import (
    ALL_SOCKET_STRATEGIES,
    LONG_TEXT,
    MODEL,
    base_url_of,
    client_config,
    collect,
    eventually,
    model_server,
    say,
    turn,
)

# How the old response is seen to end upstream, per strategy.
UPSTREAM_END = {
    CancelStrategy.NATIVE_CANCEL: "incomplete:cancelled",
    CancelStrategy.NATIVE_STEER: "incomplete:steered",
    CancelStrategy.HOT_SPARE: "closed",
    CancelStrategy.RECONNECT: "closed",
}


@asynccontextmanager
async def session(strategy: CancelStrategy) -> AsyncIterator[ResponsesClient]:
    """A client whose profile picks ``strategy``, against the matching server mode."""
    openai_like = strategy is not CancelStrategy.NATIVE_CANCEL
    steer = strategy is CancelStrategy.NATIVE_STEER
    async with model_server(openai_like=openai_like, steer=steer) as server:
        config = client_config(
            base_url_of(server), openai_like=openai_like,
            steer_models=frozenset({MODEL}) if steer else frozenset(),
            cancel_strategy=strategy if strategy is CancelStrategy.RECONNECT else None,
        )
        assert config.profile.cancel_strategy is strategy
        client = await open_client(config)
        assert isinstance(client, ResponsesClient)
        if client.profile.keeps_spare:
            assert await client.wait_spare(10)
        try:
            yield client
        finally:
            await client.close()


@pytest.mark.parametrize("strategy", ALL_SOCKET_STRATEGIES)
async def test_steer_yields_no_stale_event_and_stops_the_old_answer(
    strategy: CancelStrategy,
) -> None:
    async with session(strategy) as client:
        old = await client.start(turn("[script:long][rate:300]"))
        seen = await collect(old, limit=5)
        new = await client.steer(old, turn(say("fresh answer")))
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
        await eventually(lambda: old.upstream_end == UPSTREAM_END[strategy])


@pytest.mark.parametrize("strategy", ALL_SOCKET_STRATEGIES)
async def test_stop_ends_the_turn_and_the_next_turn_is_clean(strategy: CancelStrategy) -> None:
    async with session(strategy) as client:
        old = await client.start(turn("[script:long][rate:300]"))
        await collect(old, limit=3)
        await old.cancel()
        assert await collect(old) == []
        expected_end = UPSTREAM_END[strategy]
        if strategy is CancelStrategy.NATIVE_STEER:
            expected_end = "closed"  # a plain stop has nothing to steer to: the spare takes over
        await eventually(lambda: old.upstream_end == expected_end)
        after = await client.start(turn(say("clean slate")))
        events = await collect(after)
        assert isinstance(events[-1], Completed)
        assert after.text == "clean slate"


async def test_hot_spare_sends_the_re_prompt_without_opening_a_socket() -> None:
    async with session(CancelStrategy.HOT_SPARE) as client:
        assert client.state().connections_opened == 2
        old = await client.start(turn("[script:long][rate:300]"))
        await collect(old, limit=2)
        new = await client.steer(old, turn(say("on the spare")))
        assert new.sent_at is not None
        assert client.state().connections_opened == 2  # the re-prompt used the warm spare
        assert (await collect(new))[-1].__class__ is Completed
        assert await client.wait_spare(10)  # and a new spare was warmed in the background
        assert client.state().connections_opened == 3


async def test_steer_after_the_old_turn_finished_just_starts_the_new_one() -> None:
    async with session(CancelStrategy.HOT_SPARE) as client:
        old = await client.start(turn(say("short")))
        await collect(old)
        new = await client.steer(old, turn(say("next")))
        assert (await collect(new))[-1].__class__ is Completed
        assert new.text == "next"
        assert client.state().connections_opened == 2  # nothing to cancel: no swap


async def test_a_cancel_before_the_response_started_still_stops_it() -> None:
    async with session(CancelStrategy.NATIVE_CANCEL) as client:
        old = await client.start(turn("[script:long][rate:300][ttft:200]"))
        new = await client.steer(old, turn(say("early steer")))
        assert await collect(old) == []
        assert (await collect(new))[-1].__class__ is Completed
        assert new.text == "early steer"
        assert old.upstream_end == "incomplete:cancelled"


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
