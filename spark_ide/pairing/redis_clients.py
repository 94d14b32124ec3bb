"""A redis.asyncio client per event loop, for the parts of the IDE that talk to Redis directly."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis


class LoopClients:
    """One client per event loop: a redis.asyncio connection belongs to the loop that made it
    (tests and the benchmarks' helpers run several). Clients of loops that have closed go."""

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._clients: dict[asyncio.AbstractEventLoop, aioredis.Redis] = {}

    def get(self) -> aioredis.Redis:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for stale in [known for known in self._clients if known.is_closed()]:
                del self._clients[stale]
            client = self._clients[loop] = aioredis.Redis.from_url(
                self.url, socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s
            )
        return client
