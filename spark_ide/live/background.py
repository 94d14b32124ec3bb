"""Tasks started and not awaited where they start, kept referenced until they end (asyncio
itself keeps only a weak reference to a running task)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, work: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self) -> None:
        """Wait for the tasks there are now (their failures were theirs to report)."""
        for task in list(self._tasks):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task

    async def close(self) -> None:
        """Cancel the tasks there are now and wait for them to end."""
        for task in list(self._tasks):
            task.cancel()
        await self.drain()
