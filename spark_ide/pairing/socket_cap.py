"""The per-user cap on open session sockets (SPARK_MAX_SOCKETS_PER_USER, docs/security.md T18).

A script opening sockets in a loop would otherwise hold a room connection, an outbox and its
task per socket without end. Without Redis (the embedded default) each process counts its own
sockets. With ``REDIS_URL`` the count is across every server process:

- one sorted set per user in Redis, ``<prefix><user id>``; a member per open socket
  (``<process>:<socket>``), scored by the Redis time (ms) at which it expires;
- taking a socket is one Lua script (atomic: two processes racing for the last place cannot
  both get it): drop the expired members, count the rest, add this one if under the cap;
- each process refreshes the expiry of its own members every ``ttl / 3`` (one script per user
  it holds sockets of, pipelined), so the members of a process that died (kill -9) expire
  within ``ttl`` and stop counting. Giving a socket back removes its member;
- Redis not answering when a socket is taken: the process counts it itself against the cap
  (its own sockets only; one warning a minute), and gives it back there later. A member
  Redis lost (a restart without persistence) is not added again by the refresh: Redis lost
  the rooms' leases with it too, so those rooms close and their sockets reconnect and are
  counted anew.

Imports no Django: the consumer builds one ``SocketCap`` from the settings.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .redis_clients import LoopClients

log = logging.getLogger(__name__)

KEY_PREFIX = "spark:sockets:"
TTL_S = 30.0  # a dead process's sockets stop counting this long after its last refresh
WARN_EVERY_S = 60.0

# KEYS[1] the user's set; ARGV: member, limit, ttl (ms). 1: taken, 0: the user is at the cap.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS[1] the user's set; ARGV: ttl (ms), then this process's members in it. Only members still
# there are refreshed (XX): one given back meanwhile is not brought back.
_REFRESH = """
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
"""


class LocalCount:
    """How many session sockets each user holds open in this process."""

    def __init__(self) -> None:
        self.open: dict[int, int] = {}

    def take(self, user_id: int, limit: int) -> bool:
        held = self.open.get(user_id, 0)
        if held >= limit:
            return False
        self.open[user_id] = held + 1
        return True

    def add(self, user_id: int) -> None:
        """Count a socket another count (Redis's) already let in."""
        self.open[user_id] = self.open.get(user_id, 0) + 1

    def give_back(self, user_id: int) -> None:
        held = self.open.get(user_id, 0) - 1
        if held > 0:
            self.open[user_id] = held
        else:
            self.open.pop(user_id, None)


@dataclass(eq=False)
class Ticket:
    """One taken socket, given back with ``SocketCap.give_back`` once its socket is gone.
    ``member`` is its entry in Redis; None when only this process counted it."""

    user_id: int
    member: str | None = None
    given_back: bool = field(default=False, init=False)


class SocketCap:
    """The cap: this process's own count always (``local``); with ``url``, the count in Redis
    across processes decides, and the local count is the fallback when Redis does not answer."""

    def __init__(self, url: str | None = None, *, prefix: str = KEY_PREFIX, ttl_s: float = TTL_S) -> None:
        self.url = url or None
        self.prefix = prefix
        self.ttl_ms = max(int(ttl_s * 1000), 1)
        self.refresh_every_s = ttl_s / 3
        self.process = uuid.uuid4().hex[:12]
        self.local = LocalCount()
        self.held: dict[int, set[str]] = {}  # user -> this process's members in Redis
        # Short timeouts: a socket's connect waits on this.
        self._clients = LoopClients(self.url, timeout_s=1) if self.url is not None else None
        self._refresher: asyncio.Task[None] | None = None
        self._removals: set[asyncio.Task[None]] = set()
        self._warned_at = -WARN_EVERY_S

    def key(self, user_id: int) -> str:
        return f"{self.prefix}{user_id}"

    def _redis(self) -> aioredis.Redis:
        assert self._clients is not None
        return self._clients.get()

    async def take(self, user_id: int, limit: int) -> Ticket | None:
        """A ticket for one more socket of the user's, or None: the user holds ``limit`` already."""
        if self.url is None:
            return Ticket(user_id) if self.local.take(user_id, limit) else None
        member = f"{self.process}:{uuid.uuid4().hex}"
        try:
            taken = await self._redis().eval(_TAKE, 1, self.key(user_id), member, limit, self.ttl_ms)
        except (RedisError, OSError) as exc:
            self._warn("could not count the socket in Redis (%s): this process counts its own sockets only", exc)
            return Ticket(user_id) if self.local.take(user_id, limit) else None
        # Cancelled while the script ran: its member, if added, is never refreshed and expires.
        if not taken:
            return None
        self.local.add(user_id)
        self.held.setdefault(user_id, set()).add(member)
        self._keep_refreshing()
        return Ticket(user_id, member)

    def give_back(self, ticket: Ticket) -> None:
        """Give the ticket's socket back (a second call does nothing). Synchronous, so that it
        can run where a connect is being cancelled: the member's removal in Redis goes on in
        a task of its own; if that fails, the member expires, no longer refreshed."""
        if ticket.given_back:
            return
        ticket.given_back = True
        self.local.give_back(ticket.user_id)
        if ticket.member is None:
            return
        members = self.held.get(ticket.user_id)
        if members is not None:
            members.discard(ticket.member)
            if not members:
                del self.held[ticket.user_id]
        if not self.held and self._refresher is not None:
            if not self._refresher.get_loop().is_closed():
                self._refresher.cancel()
            self._refresher = None
        task = asyncio.ensure_future(self._remove(ticket.user_id, ticket.member))
        self._removals.add(task)
        task.add_done_callback(self._removals.discard)

    async def settled(self) -> None:
        """Wait for the removals given back so far to reach Redis (a server shutting down:
        ``pairing.shutdown``)."""
        while self._removals:
            await asyncio.gather(*self._removals, return_exceptions=True)

    async def _remove(self, user_id: int, member: str) -> None:
        try:
            await self._redis().zrem(self.key(user_id), member)
        except (RedisError, OSError) as exc:
            self._warn("could not give a socket back in Redis (%s): it stops counting once it expires", exc)

    def _keep_refreshing(self) -> None:
        task = self._refresher
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            return
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while self.held:
            await asyncio.sleep(self.refresh_every_s)
            try:
                await self.refresh()
            except (RedisError, OSError) as exc:
                self._warn("could not refresh this process's sockets in Redis (%s)", exc)

    async def refresh(self) -> None:
        """Push back the expiry of every member this process holds (the heartbeat)."""
        held = [(user_id, sorted(members)) for user_id, members in self.held.items() if members]
        if not held:
            return
        async with self._redis().pipeline(transaction=False) as pipe:
            for user_id, members in held:
                pipe.eval(_REFRESH, 1, self.key(user_id), self.ttl_ms, *members)
            await pipe.execute()

    def _warn(self, message: str, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_S:
            self._warned_at = now
            log.warning(message, exc)
