"""The Pilot's connection to the model: opened and warmed before the first prompt, replaced
after a failure it cannot recover from, closed with the room."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from spark_ide.upstream import ModelClient

from .meter import NO_METER, Meter

log = logging.getLogger(__name__)


class ModelLink:
    def __init__(self, connect: Callable[[], Awaitable[ModelClient]], *, meter: Meter = NO_METER) -> None:
        self._connect = connect
        self._meter, self._opened = meter, False  # the meter counts every client after the first
        self._client: ModelClient | None = None
        self._connecting: asyncio.Task[ModelClient] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def warm(self) -> None:
        """Start connecting now, so the first prompt finds a warm connection."""
        if self._client is None and (self._connecting is None or self._connecting.done()):
            self._connecting = asyncio.create_task(self._open())
            # A warm-up that fails is retried by the first turn; it must not log as unretrieved.
            self._connecting.add_done_callback(lambda task: task.cancelled() or task.exception())

    async def client(self) -> ModelClient:
        """The warm client; raises UpstreamError/OSError when none can be had."""
        if self._client is not None:
            return self._client
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._open())
        return await self._connecting

    async def _open(self) -> ModelClient:
        client = await self._connect()
        self._client = client
        if self._opened:
            self._meter.upstream_reconnected("client")
        self._opened = True
        return client

    @property
    def model(self) -> str | None:
        """The model of the current client (None: no client yet)."""
        return self._client.model_name if self._client is not None else None

    def drop(self) -> None:
        """Give up on the client (it failed for good): the next turn opens a new one. The old
        one is closed in the background so none of its sockets linger."""
        client, self._client, self._connecting = self._client, None, None
        if client is not None:
            task = asyncio.create_task(client.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task
