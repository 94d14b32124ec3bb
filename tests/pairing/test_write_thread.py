"""The rooms' database thread of their own: its jobs run one at a time in the order given,
each one's answer or error goes back to the loop that asked."""

from __future__ import annotations

import asyncio
import threading

import pytest

from spark_ide.pairing.write_thread import WriteThread


async def test_jobs_run_in_order_on_one_thread_and_errors_come_back() -> None:
    writes = WriteThread("test-writes")
    ran: list[tuple[int, int]] = []

    def job(n: int) -> int:
        ran.append((n, threading.get_ident()))
        return n * 10

    def failing() -> int:
        raise ValueError("refused")

    results = await asyncio.gather(writes.run(lambda: job(1)), writes.run(failing), writes.run(lambda: job(2)),
                                   return_exceptions=True)
    assert results[0] == 10 and results[2] == 20
    assert isinstance(results[1], ValueError)
    assert [n for n, _ in ran] == [1, 2]
    assert len({thread for _, thread in ran}) == 1 and ran[0][1] != threading.get_ident()
    assert await writes.run(lambda: job(3)) == 30  # the thread goes on after a failure


async def test_a_caller_that_stops_waiting_does_not_stop_the_job() -> None:
    writes = WriteThread("test-writes")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)
        finished.set()

    waiting = asyncio.ensure_future(writes.run(slow))
    await asyncio.to_thread(started.wait, 5)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    assert await writes.run(lambda: finished.is_set())  # it ran to its end, and the next one after it
