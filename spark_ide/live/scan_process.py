"""The watchdog's scan process: where bandit and the full scan run, off the server's event loop.

bandit is pure Python and slow (~4 ms for a 10-line block, ~1 s for a 2,000-line file). In a
thread of the server it holds the GIL that the event loop needs: streaming a 2,000-line
answer with bandit in a thread ran at 0.35x the speed without it (``spark_bench guard``).
So bandit and the full scan run in one long-lived process of their own, started on first
use with bandit loaded once (its Python API, not a command per block); the loop only waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from spark_ide.guard import Finding, bandit_scan, full_scan, wants_bandit, warm_up

log = logging.getLogger(__name__)

T = TypeVar("T")
# Below the server: on a busy machine the scan takes about a tenth of a core (nice 19 would leave it
# ~1.5 %: a 30-minute soak's full scans then fell far behind).
SCAN_NICENESS = 10
_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _start_scan_process() -> None:
    """In the scan process: below the server in the CPU's queue (a scan uses the time the
    server and the model leave; on a busy machine a room's stream comes first), bandit loaded."""
    with contextlib.suppress(OSError):
        os.nice(SCAN_NICENESS)
    warm_up()


def scan_pool() -> ProcessPoolExecutor:
    """The scan process (spawned: the server has threads, and forking it would copy their locks)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_scan_process,
            )
        return _pool


def _ready() -> None:
    """Nothing: a first task for the scan process, to have it started."""


def start_scan_process() -> None:
    """Have the scan process started now (a room opening), not at the first block a model
    writes: its start holds the event loop a moment and its bandit load takes the process a
    second, and every room's stream waited behind it (the first level of ``spark_bench
    rooms``: p99 95-270 ms, then 21 ms at the next)."""
    scan_pool().submit(_ready).add_done_callback(_started)


def _started(future: Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("the watchdog's scan process did not start: %s", future.exception())


async def in_scan_process(work: Callable[[], T]) -> T:
    """Run ``work`` (a picklable call: a module function with its arguments) in the scan
    process; a process that died is replaced once."""
    global _pool
    for attempt in (1, 2):
        pool = scan_pool()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, work)
        except BrokenProcessPool:
            log.warning("the watchdog's scan process died; starting another")
            with _pool_lock:
                if _pool is pool:
                    _pool = None
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def shutdown_scan_pool() -> None:
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


async def scan_in_process(files: Mapping[str, str]) -> list[Finding]:
    """The full scan in the scan process (where no Celery worker does it)."""
    return await in_scan_process(functools.partial(full_scan, dict(files)))


Block = tuple[str, int, str]  # a completed top-level block: path, first line, source

# While a turn streams, bandit reads only blocks holding something one of its checks looks for
# (``guard.wants_bandit``: an import, a call of a risky module, an SQL word, a secret-like name,
# ...): bandit's CPU time is most of the watchdog's, and most blocks of ordinary code have none of
# these. The full scan after the turn reads every line of the touched files, so nothing is left
# unread. That test runs in the scan process too, not in the server: ~10 µs a block, it was a
# fifth of the watch's time on the loop, where sending a block costs less.


def bandit_blocks(blocks: list[Block]) -> list[Finding]:
    """bandit over those of several blocks it has something to look at in, in one call (one trip
    to the scan process for all of them)."""
    found: list[Finding] = []
    for path, first_line, source in blocks:
        if wants_bandit(source):
            found += bandit_scan(path, source, first_line=first_line)
    return found


async def bandit_in_process(blocks: list[Block]) -> list[Finding]:
    return await in_scan_process(functools.partial(bandit_blocks, blocks))
