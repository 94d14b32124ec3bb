"""Transparent re-opening on the documented close codes, through a proxy that closes the
socket the way a provider's edge does (close frame with a code, empty close frame, cut).
Every case runs against the local mode (no spare) and the OpenAI-like mode (hot spare)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from benchmarks.loopproxy import LoopProxy
from spark_ide.upstream import Completed, ErrorEvent, ResponsesClient, open_client
from tests.support.recording_engine import recording_engine
from tests.support.waits import eventually
from tests.upstream.helpers import Session, client_config, collect, model_server, say, turn

# 1005 travels as an empty close frame and 1006 as a cut connection; 1015 may not be sent
# on the wire, so websockets fails the socket on it, which is an abnormal closure too.
RETRIED = [1001, 1005, 1006, 1011, 1012, 1013, 1015]


@pytest.fixture(params=["local", "openai-like"])
async def session(request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    openai_like = request.param == "openai-like"
    async with model_server(openai_like=openai_like) as server:
        proxy = await LoopProxy("127.0.0.1", server.port).start()
        client = await open_client(client_config(proxy.base_url(), openai_like=openai_like))
        assert isinstance(client, ResponsesClient)
        if client.profile.keeps_spare:
            await eventually(lambda: client.spare_ready)
        try:
            yield Session(client, recording_engine(server), proxy)
        finally:
            await client.close()
            await proxy.stop()


def end_sockets(proxy: LoopProxy, code: int) -> None:
    if code == 1006:
        proxy.cut_all()
    else:
        proxy.close_all(None if code == 1005 else code)


@pytest.mark.parametrize("code", RETRIED)
async def test_it_reopens_idle_sockets_closed_with(session: Session, code: int) -> None:
    proxy, client = session.proxy, session.client
    warmups = session.engine.warmups
    before, sockets = len(warmups), proxy.connections
    end_sockets(proxy, code)
    # Every socket the client keeps (primary, and spare where it keeps one) is reopened and
    # warmed: the server answered a new warm-up for each.
    await eventually(lambda: len(warmups) >= before + sockets)
    stream = await client.start(turn(say("after the close")))
    events = await collect(stream)
    assert isinstance(events[-1], Completed)
    assert stream.text == "after the close"
    assert stream.resends == 0


@pytest.mark.parametrize("code", RETRIED)
async def test_it_resends_a_turn_that_had_no_output_yet_when_closed_with(session: Session, code: int) -> None:
    proxy, client = session.proxy, session.client
    stream = await client.start(turn(say("survives the close", ttft_ms=300)))
    await eventually(lambda: stream.first_byte_at is not None)  # response.created seen
    end_sockets(proxy, code)
    events = await collect(stream)
    assert isinstance(events[-1], Completed)
    assert stream.text == "survives the close"
    assert stream.resends >= 1


async def test_it_reports_a_socket_lost_mid_answer_and_serves_the_next_turn(session: Session) -> None:
    proxy, client = session.proxy, session.client
    stream = await client.start(turn("[script:long][rate:200]"))
    head = await collect(stream, limit=3)
    proxy.close_all(1011)
    rest = await collect(stream)
    assert isinstance(rest[-1], ErrorEvent)
    assert rest[-1].code == "connection_lost"
    assert rest[-1].retryable
    assert all(not isinstance(e, ErrorEvent) for e in head + rest[:-1])
    after = await client.start(turn(say("next turn")))
    assert isinstance((await collect(after))[-1], Completed)
    assert after.text == "next turn"


@pytest.mark.parametrize("code", [1008, 4000])
async def test_it_does_not_resend_after_an_undocumented_close_code(session: Session, code: int) -> None:
    proxy, client = session.proxy, session.client
    stream = await client.start(turn(say("lost", ttft_ms=300)))
    await eventually(lambda: stream.first_byte_at is not None)
    proxy.close_all(code)
    events = await collect(stream)
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent)
    assert events[0].code == "connection_lost"
    assert str(code) in events[0].message
    assert stream.resends == 0
