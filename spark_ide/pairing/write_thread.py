"""A database thread of the rooms' own, for their document updates and event-log rows.

Every other database call of the process (``database_sync_to_async``: the requests, a
prompt's reads of the course's policy, the guard's mode, the spend, the file rows' refresh,
the turn records) shares one thread, first come first served. The rooms' writes are the ones
frames wait for (a document update is sent only once it is saved), and behind a burst of
those calls (twenty rooms prompting at once: six reads each) they waited hundreds of
milliseconds for a write of a few. On this thread they wait only for each other.

It has its own connection, and is used on PostgreSQL only, which runs its transactions beside
the other thread's. On SQLite the rooms' writes stay on the shared thread (``usable``): a
second writer there does not write in parallel but waits for the database's lock in SQLite's
busy handler, which sleeps in steps of up to 100 ms; with the two threads of one process
contending, whole test suites slowed down twofold and pages waited past their timeouts.

The connection is closed after ``IDLE_CLOSE_S`` without work, as Django closes the others
(``CONN_MAX_AGE``); not sooner: on PostgreSQL a new connection costs a few round trips, and a
person typing after a pause would wait for them. It is checked (and opened again if it broke:
a database restart) after a failed job, not before every job, as each check is one more round
trip to the database, and on a loaded machine every round trip waits to be scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from django.db import close_old_connections, connections

T = TypeVar("T")

IDLE_CLOSE_S = 60.0


def usable() -> bool:
    """Whether the database takes a second connection writing beside the shared thread's."""
    return bool(connections["default"].vendor == "postgresql")


_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class WriteThread:
    """Runs functions on one thread of its own (started at the first), in the order given."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._jobs.put((fn, loop, done))
        self._start()
        return await done

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        check = True
        while True:
            try:
                fn, loop, done = self._jobs.get(timeout=IDLE_CLOSE_S)
            except queue.Empty:
                connections.close_all()  # this thread's own connection
                fn, loop, done = self._jobs.get()
                check = True
            if check:  # after a pause or a failure: a broken connection (a database restart) is opened
                close_old_connections()  # again; not before every job (PostgreSQL: a health check's trip)
            try:
                outcome: tuple[bool, Any] = (True, fn())
                check = False
            except BaseException as exc:  # handed to the awaiting side
                outcome = (False, exc)
                check = True
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done, outcome)


def _settle(done: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if done.done():  # the awaiting side was cancelled
        return
    ok, value = outcome
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)


_THREAD = WriteThread("spark-room-writes")


async def run_write(fn: Callable[[], T]) -> T:
    """``fn()`` on the rooms' write thread, or on the shared database thread where a second
    connection cannot be had (``usable``)."""
    if usable():
        return await _THREAD.run(fn)
    result: T = await database_sync_to_async(fn)()
    return result
