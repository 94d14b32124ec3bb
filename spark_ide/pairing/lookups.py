"""The reads a session socket makes while it connects, on threads of their own.

``database_sync_to_async`` runs everything on one thread by default, the thread every room's
storage writes share (``pairing.adapter``). A page that connects waited there behind them, so
in a reconnect storm (a server restart: every page of every room at once) the handshakes
queued behind the rooms' writes, one lookup at a time. These reads (who is the user, which
session, which role) change nothing and need no ordering with the writes, so they run on a
small pool of their own: each thread keeps its own database connection (Django's are per
thread), checked before and after each use like any other (``close_old_connections``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from channels.db import DatabaseSyncToAsync

P = ParamSpec("P")
R = TypeVar("R")

LOOKUP_THREADS = 2  # more would only take turns at the GIL (and at SQLite's file lock)
_pool = ThreadPoolExecutor(max_workers=LOOKUP_THREADS, thread_name_prefix="spark-lookup")


def on_lookup_thread(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``func`` (a read of the database) as a coroutine function run on the lookup pool."""
    return DatabaseSyncToAsync(func, thread_sensitive=False, executor=_pool)  # type: ignore[no-any-return]
