"""Turn records written in order, off the event loop's critical path, retried on failure."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .retry import with_retries

log = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class _Write:
    name: str
    write: Callable[[], Awaitable[None]]
    then: Callable[[], None] | None


class Records:
    """A queue of writes done one after another; ``then`` runs once its write is done."""

    def __init__(self, retries: tuple[float, ...]) -> None:
        self._retries = retries
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def put(self, name: str, write: Callable[[], Awaitable[None]], *, then: Callable[[], None] | None = None) -> None:
        self._queue.put_nowait(_Write(name, write, then))

    async def drain(self) -> None:
        """Wait until every write put so far is done (or given up), ``DRAIN_TIMEOUT_S`` at most."""
        try:
            await asyncio.wait_for(self._queue.join(), timeout=DRAIN_TIMEOUT_S)
        except TimeoutError:
            log.warning("turn records still not written after %.0f s", DRAIN_TIMEOUT_S)

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self._queue.join(), timeout=DRAIN_TIMEOUT_S)
        except TimeoutError:
            log.warning("turn records not written within %.0f s of the room's close (the database thread "
                        "is that far behind): the one in flight and %d queued given up", DRAIN_TIMEOUT_S,
                        self._queue.qsize())
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if await self._write(item) and item.then is not None:
                    item.then()
            except Exception:
                log.exception("after recording %s", item.name)
            finally:
                self._queue.task_done()

    async def _write(self, item: _Write) -> bool:
        try:
            await with_retries(item.write, self._retries)
        except Exception:
            log.exception("could not record %s", item.name)
            return False
        return True
