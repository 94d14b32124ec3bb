"""The C allocator's view of this process, and giving its free memory back (issue 16).

A reconnect storm (hundreds of pages joining a room within seconds, then leaving) makes the
process allocate a few hundred MB for a moment: each joining socket's catch-up, its encoded
document, its frames in the socket layer's buffers. Once the sockets are gone almost all of it
is free again, but glibc's ``free`` only hands memory back to the system from the top of a heap
(or whole ``mmap``-ed blocks): pages in the middle of an arena stay resident, reused by later
allocations but counted in the process's RSS for good. ``malloc_trim(0)`` walks every arena and
releases (``MADV_DONTNEED``) every free page, wherever it is.

* ``mallinfo()``: glibc's counters (``mallinfo2``), summed over all arenas: bytes in use, bytes
  free but kept, bytes in ``mmap``-ed blocks. None where the C library is not glibc.
* ``malloc_trim()``: one trim; what it took and gave back. None where it is not glibc.
* ``release_lost_write_buffers()``: a TCP connection that is gone lets go of what it could
  not send at once. Twisted keeps a connection's unsent data in its transport after the
  connection is lost, and the transport and its protocol (autobahn's, under Daphne) reference
  each other: the data goes only when the collector next finds that cycle, which a storm's
  garbage may not trigger for minutes. A page that joins and leaves at once (a reconnect storm)
  leaves its whole document frame there: 330 MB for 400 sockets of a room with an 0.8 MB
  document (``benchmarks/storms.py``). Installed by the ASGI module.
* ``TrimAfterClose``: the server's own trim, after sockets close in bulk. Each closed socket is
  one ``closed()`` call; once ``burst`` have closed since the last trim, a trim runs ``quiet_s``
  after the last of them (the storm is over; ``max_wait_s`` after the burst at the latest, when
  sockets never stop closing), at most once per ``min_interval_s``, on a thread of its own
  (``malloc_trim`` releases the GIL; the event loop keeps serving meanwhile, though its own
  allocations wait for the arena the trim holds: about 50 ms for 500 MB given back).

Linux with glibc only: elsewhere every call is a no-op. ``SPARK_MALLOC_TRIM=0`` turns the
server's trim off (``trimmer_from_env``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ENV_TRIM = "SPARK_MALLOC_TRIM"
BURST = 50  # sockets closed since the last trim before the next one is considered
QUIET_S = 2.0  # ... and this long without another closing (the storm is over),
MAX_WAIT_S = 15.0  # ... or this long after the burst was reached, if sockets keep closing
MIN_INTERVAL_S = 30.0  # at most one trim this often


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
    )]


def _load_glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p  # only glibc has it (not musl)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_libc = _load_glibc()


@dataclass(frozen=True)
class MallInfo:
    """glibc's allocator counters, in bytes, over all arenas."""

    arena: int  # obtained with brk/sbrk and the arenas' heaps (not the mmap-ed blocks)
    in_use: int  # of that, in allocated chunks
    free: int  # of that, in free chunks: memory glibc keeps (resident unless trimmed)
    mmapped: int  # in blocks mmap-ed one each (large allocations; returned on free)
    top_pad: int  # the part of ``free`` at the top of the main heap, which plain free() can return


def mallinfo() -> MallInfo | None:
    """The allocator's counters now; None without glibc (or a glibc before 2.33)."""
    if _libc is None:
        return None
    try:
        call = _libc.mallinfo2
    except AttributeError:
        return None
    call.restype = _MallInfo2
    info: _MallInfo2 = call()
    return MallInfo(arena=info.arena, in_use=info.uordblks, free=info.fordblks, mmapped=info.hblkhd,
                    top_pad=info.keepcost)


@dataclass(frozen=True)
class Trimmed:
    """One ``malloc_trim(0)``: its duration and the resident memory before and after."""

    seconds: float
    rss_before: int
    rss_after: int
    released: bool  # malloc_trim's own answer: some memory went back to the system
    at: float = 0.0  # wall-clock time it began

    @property
    def given_back(self) -> int:
        return self.rss_before - self.rss_after


def malloc_trim() -> Trimmed | None:
    """Give every free page of every arena back to the system; None without glibc. Takes the
    arenas' locks in turn, so other threads' allocations wait for it meanwhile (milliseconds
    for a few hundred MB; ``tests/hardening/test_native_memory.py``)."""
    if _libc is None:
        return None
    before, at = rss_bytes(), time.time()
    began = time.perf_counter()
    released = bool(_libc.malloc_trim(0))
    took = time.perf_counter() - began
    return Trimmed(seconds=took, rss_before=before, rss_after=rss_bytes(), released=released, at=at)


def rss_bytes(pid: int | None = None) -> int:
    """Resident set size of a process (this one by default) from /proc; 0 where unknown."""
    try:
        status = Path(f"/proc/{pid or 'self'}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class TrimAfterClose:
    """Trim once sockets have closed in bulk (module docstring). ``closed()`` is called on the
    event loop; the trim itself runs on a thread of its own."""

    def __init__(
        self, *, burst: int = BURST, quiet_s: float = QUIET_S, max_wait_s: float = MAX_WAIT_S,
        min_interval_s: float = MIN_INTERVAL_S, trim: Callable[[], Trimmed | None] = malloc_trim,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self.min_interval_s = min_interval_s
        self._trim = trim
        self._clock = clock
        self._closed = 0  # sockets closed since the last trim began
        self._armed_at: float | None = None  # when the burst was reached
        self._last_trim: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Future[Trimmed | None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.trims: list[Trimmed] = []  # the last few (logged too)

    def closed(self, count: int = 1) -> None:
        """``count`` sockets closed just now (on the event loop)."""
        self._closed += count
        if self._closed < self.burst:
            return
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to schedule on
            self._schedule(asyncio.get_running_loop())

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()  # another one closed: wait until the closings stop
        now = self._clock()
        if self._armed_at is None:
            self._armed_at = now
        delay = min(self.quiet_s, max(0.0, self._armed_at + self.max_wait_s - now))
        if self._last_trim is not None:
            delay = max(delay, self._last_trim + self.min_interval_s - now)
        self._timer = loop.call_later(delay, self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._running is not None and not self._running.done():
            self._schedule(loop)  # still trimming: look again later
            return
        self._closed = 0
        self._armed_at = None
        self._last_trim = self._clock()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-malloc-trim")
        self._running = loop.run_in_executor(self._executor, self._trim)
        self._running.add_done_callback(self._done)

    def _done(self, running: asyncio.Future[Trimmed | None]) -> None:
        if running.cancelled():
            return
        error = running.exception()
        if error is not None:
            log.warning("malloc_trim failed: %s", error)
            return
        trimmed = running.result()
        if trimmed is None:
            return
        self.trims = [*self.trims[-9:], trimmed]
        log.info("malloc_trim after sockets closed: RSS %.1f -> %.1f MB in %.1f ms",
                 trimmed.rss_before / 1e6, trimmed.rss_after / 1e6, trimmed.seconds * 1000)

    @property
    def pending(self) -> bool:
        """A trim is scheduled or under way."""
        return self._timer is not None or (self._running is not None and not self._running.done())

    async def wait(self) -> Trimmed | None:
        """The trim scheduled or under way, once it is done (tests); None when there is none."""
        while self._timer is not None:
            await asyncio.sleep(0.01)
        if self._running is None:
            return None
        return await self._running


def release_lost_write_buffers() -> bool:
    """Make Twisted's TCP connections drop their unsent data once the connection is lost
    (module docstring); False where Twisted is not there. Safe to call more than once."""
    try:
        from twisted.internet import tcp
    except ImportError:
        return False
    original = tcp.Connection.connectionLost
    if getattr(original, "_spark_releases_buffers", False):
        return True

    def connection_lost(self: Any, reason: Any) -> None:
        try:
            original(self, reason)
        finally:
            # Nothing can be sent on a lost connection: let its data go now, not with the cycle.
            self.dataBuffer = b""
            self.offset = 0
            self._tempDataBuffer = []
            self._tempDataLen = 0

    connection_lost._spark_releases_buffers = True  # type: ignore[attr-defined]
    connection_lost.__doc__ = original.__doc__
    tcp.Connection.connectionLost = connection_lost  # type: ignore[method-assign]
    return True


def trimmer_from_env(environ: dict[str, str] | None = None) -> TrimAfterClose | None:
    """The server's trimmer, or None where it does nothing: without glibc, or with
    ``SPARK_MALLOC_TRIM=0`` (or ``false``, ``no``, ``off``)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_TRIM, "").strip().lower() in {"0", "false", "no", "off"}:
        return None
    if _libc is None:
        return None
    return TrimAfterClose()


TRIMMER = trimmer_from_env()


def socket_closed() -> None:
    """A session socket closed (``pairing.consumer``): counts towards the next trim."""
    if TRIMMER is not None:
        TRIMMER.closed()
