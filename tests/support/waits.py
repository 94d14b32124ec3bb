"""Bounded waits for something another task or process makes true."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll ``check`` until it holds; TimeoutError after ``timeout_s``."""
    async with asyncio.timeout(timeout_s):
        while not check():
            await asyncio.sleep(0.01)
