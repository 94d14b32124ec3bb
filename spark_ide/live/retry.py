"""Writes that may fail for a moment (a locked database) are tried again a few times."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def with_retries(write: Callable[[], Awaitable[T]], waits: Sequence[float]) -> T:
    """``write()``, tried again after each of ``waits`` while it raises; the last try's
    exception is raised (``len(waits) + 1`` tries in all)."""
    for wait in waits:
        try:
            return await write()
        except Exception:
            await asyncio.sleep(wait)
    return await write()
