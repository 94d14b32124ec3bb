"""The per-user socket cap across server processes (issue 16, ``pairing.socket_cap``): two
``SocketCap`` objects on the machine's Redis stand for two processes. The cap holds across
them, even when they race; a process that stops refreshing (killed) stops counting after the
TTL; with Redis down each process counts its own sockets and gives them back there."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from channels.testing import WebsocketCommunicator

from spark_ide.live.events import CloseCode
from spark_ide.pairing import consumer
from spark_ide.pairing.redis_clients import LoopClients
from spark_ide.pairing.socket_cap import SocketCap, Ticket
from tests.conftest import port_open, require
from tests.pairing.conftest import Live, connect

REDIS = "redis://127.0.0.1:6379/7"
NOWHERE = "redis://127.0.0.1:1/0"  # nothing listens there: connection refused at once
USER = 42


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    """A key prefix of this test's own in the machine's Redis, its keys deleted after."""
    require(port_open("127.0.0.1", 6379), "Redis is not running on 127.0.0.1:6379")
    name = f"spark:test-sockets:{uuid.uuid4().hex}:"
    yield name
    client = aioredis.Redis.from_url(REDIS)
    keys = [key async for key in client.scan_iter(match=name + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def members(prefix: str, user_id: int = USER) -> int:
    """The user's sockets that still count: their entries in Redis not yet expired."""
    client = aioredis.Redis.from_url(REDIS)
    try:
        seconds, micros = await client.time()
        return int(await client.zcount(f"{prefix}{user_id}", f"({seconds * 1000 + micros // 1000}", "+inf"))
    finally:
        await client.aclose()


async def take_all(cap: SocketCap, count: int, limit: int, user_id: int = USER) -> list[Ticket]:
    tickets = [await cap.take(user_id, limit) for _ in range(count)]
    assert all(ticket is not None for ticket in tickets)
    return [ticket for ticket in tickets if ticket is not None]


def give_all(cap: SocketCap, tickets: list[Ticket]) -> None:
    for ticket in tickets:
        cap.give_back(ticket)


async def test_the_cap_holds_across_processes(prefix: str) -> None:
    a, b = SocketCap(REDIS, prefix=prefix), SocketCap(REDIS, prefix=prefix)
    on_a = await take_all(a, 2, limit=3)
    on_b = await take_all(b, 1, limit=3)
    assert await b.take(USER, 3) is None and await a.take(USER, 3) is None  # 3 held, on two processes
    assert await a.take(USER + 1, 3) is not None  # another person is counted apart
    assert a.local.open == {USER: 2, USER + 1: 1} and b.local.open == {USER: 1}
    a.give_back(on_a.pop())
    a.give_back(on_a[0])
    a.give_back(on_a[0])  # a second give-back of one ticket changes nothing
    await a.settled()
    assert await members(prefix) == 1
    on_b += await take_all(b, 2, limit=3)  # what a gave back, b may take
    assert await a.take(USER, 3) is None
    give_all(b, on_b)
    await b.settled()
    assert await members(prefix) == 0 and b.local.open == {} and b._refresher is None


async def test_two_processes_racing_for_the_last_places_do_not_both_get_them(prefix: str) -> None:
    a, b = SocketCap(REDIS, prefix=prefix), SocketCap(REDIS, prefix=prefix)
    tickets = await asyncio.gather(*(cap.take(USER, 5) for _ in range(10) for cap in (a, b)))
    taken = [ticket for ticket in tickets if ticket is not None]
    assert len(taken) == 5 and await members(prefix) == 5
    assert sum(a.local.open.values()) + sum(b.local.open.values()) == 5
    for ticket in taken:
        assert ticket.member is not None
        (a if ticket.member.startswith(a.process) else b).give_back(ticket)
    await asyncio.gather(a.settled(), b.settled())
    assert await members(prefix) == 0


async def test_a_dead_processs_sockets_stop_counting_after_the_ttl(prefix: str) -> None:
    dead, alive = SocketCap(REDIS, prefix=prefix, ttl_s=0.6), SocketCap(REDIS, prefix=prefix, ttl_s=0.6)
    await take_all(dead, 2, limit=3)
    kept = await take_all(alive, 1, limit=3)
    assert dead._refresher is not None
    dead._refresher.cancel()  # killed (kill -9): nothing refreshes its sockets, nothing gives them back
    assert await alive.take(USER, 3) is None
    await asyncio.sleep(1.2)  # two TTLs: the live process refreshed its own four times meanwhile
    assert await members(prefix) == 1  # the dead process's two are gone, the live one's kept
    kept += await take_all(alive, 2, limit=3)
    assert await alive.take(USER, 3) is None
    give_all(alive, kept)
    await alive.settled()
    assert await members(prefix) == 0


async def test_redis_down_each_process_counts_its_own_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    cap = SocketCap(NOWHERE)
    logger = logging.getLogger("spark_ide.pairing.socket_cap")  # the project's logging may not propagate
    logger.addHandler(caplog.handler)
    try:
        tickets = await take_all(cap, 2, limit=2)
        assert await cap.take(USER, 2) is None  # the process's own count still caps
        assert all(ticket.member is None for ticket in tickets) and cap.local.open == {USER: 2}
        give_all(cap, tickets)
        assert cap.local.open == {} and await cap.take(USER, 2) is not None
    finally:
        logger.removeHandler(caplog.handler)
    warnings = {id(r): r for r in caplog.records if "could not count the socket in Redis" in r.getMessage()}
    assert len(warnings) == 1  # four attempts, one line a minute


async def test_redis_lost_midway_counts_what_redis_let_in_and_gives_back_both(prefix: str) -> None:
    cap = SocketCap(REDIS, prefix=prefix, ttl_s=0.6)
    in_redis = await take_all(cap, 1, limit=2)
    cap._clients = LoopClients(NOWHERE, timeout_s=1)  # Redis goes away
    local = await take_all(cap, 1, limit=2)
    assert local[0].member is None and await cap.take(USER, 2) is None  # the Redis one counts here too
    give_all(cap, in_redis + local)
    await cap.settled()  # its removal failed: the member is no longer refreshed and expires
    assert cap.local.open == {} and cap.held == {} and cap._refresher is None
    await asyncio.sleep(0.8)
    assert await members(prefix) == 0


@pytest.mark.django_db(transaction=True)
async def test_a_socket_past_the_cap_counted_on_another_process_is_refused(
    live: Live, rooms: None, settings: Any, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: this process's consumer counts in Redis; another process holds two of the
    owner's three sockets, so the second here is refused (4429) until the other gives one back."""
    from spark_ide.asgi import application

    settings.SPARK_MAX_SOCKETS_PER_USER = 3
    here, elsewhere = SocketCap(REDIS, prefix=prefix), SocketCap(REDIS, prefix=prefix)
    monkeypatch.setattr(consumer, "SOCKETS", here)
    other = await take_all(elsewhere, 2, limit=3, user_id=live.owner.pk)
    first = await connect(live)
    headers = [(b"authorization", f"Token {live.owner_token}".encode())]
    refused = WebsocketCommunicator(application, f"/ws/sessions/{live.session_id}/", headers=headers)
    assert (await refused.connect(timeout=10))[0]  # accepted only to say why
    error = json.loads((await refused.receive_output(timeout=5))["text"])
    assert error["code"] == "rate_limited" and "at most 3" in error["message"]
    assert await refused.receive_output(timeout=5) == {"type": "websocket.close", "code": CloseCode.TOO_MANY_SOCKETS}
    elsewhere.give_back(other.pop())  # a tab closed on the other process
    await elsewhere.settled()
    second = await connect(live)
    for client in (first, second):
        await client.close()
    give_all(elsewhere, other)
    await asyncio.gather(here.settled(), elsewhere.settled())
    assert await members(prefix, live.owner.pk) == 0 and here.local.open == {}
