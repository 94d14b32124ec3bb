"""Opt-in memory tracing of a running server process: what still grows (issue 12).

Nothing happens unless the environment asks for it, so the hook can stay wired in
production code:

* ``SPARK_MEMTRACE=1``: on ``SIGUSR1`` append a report to ``SPARK_MEMTRACE_FILE`` (default
  ``<tmp>/spark-memtrace-<pid>.txt``): RSS, live objects counted by type and their change
  since the previous report, every live pycrdt document with the size of its encoded
  state (a document keeps deleted items as tombstones, which Python's allocator never sees),
  and the rooms' replay logs (``live.replay``: events and counted bytes kept per room).
* ``SPARK_TRACEMALLOC=N`` (N >= 1, frames per trace): the same, and ``tracemalloc`` is started
  at install time with N frames; each report then lists the allocation sites that grew most
  since the previous report and since the first one. Tracing slows the process down (about
  2x): use it to find a cause, not to measure speed.
* ``SPARK_MEMTRACE_TRIM=1``: after each report, call glibc's ``malloc_trim(0)`` and append what
  it gave back (RSS before and after, how long it took): memory that a trim gives back was free
  memory the allocator kept, not a leak (``spark_ide.ops.native_memory``).
* ``SPARK_MEMTRACE_GARBAGE=1``: each report also describes the garbage its ``gc.collect()``
  found (objects in reference cycles, kept until a full collection): counted by type, with the
  bytes objects they held (which the collector's thresholds do not see).
* ``SPARK_MEMTRACE_MALLOCSTATS=1``: each report also holds ``sys._debugmallocstats()``, the
  Python allocator's arenas and pools (how fragmented its own memory is).

Every report shows glibc's counters (``mallinfo2``: bytes in use, free but kept, mmap-ed) and its
arenas' free chunks (``malloc_info``), or jemalloc's own counters when it is preloaded
(``spark_ide.ops.allocator``).

``install_from_env()`` is the one call a process makes (the ASGI module, before serving). The
report is built on the running event loop when there is one (between callbacks, so no
document transaction is open), else in the signal handler. ``report()`` builds one directly,
for tests and for a caller that wants it without a signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import linecache
import os
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from spark_ide.ops import allocator, native_memory
from spark_ide.ops.native_memory import rss_bytes as rss_bytes  # also imported from here by the soak

if TYPE_CHECKING:
    from spark_ide.live.replay import ReplayLog

ENV_SWITCH = "SPARK_MEMTRACE"
ENV_TRACEMALLOC = "SPARK_TRACEMALLOC"
ENV_FILE = "SPARK_MEMTRACE_FILE"
ENV_TRIM = "SPARK_MEMTRACE_TRIM"
ENV_MALLOCSTATS = "SPARK_MEMTRACE_MALLOCSTATS"
ENV_GARBAGE = "SPARK_MEMTRACE_GARBAGE"
_ON = {"1", "true", "yes", "on"}
TOP_SITES = 25
TOP_TYPES = 30


class MemTrace:
    """The state kept between two reports of one process."""

    def __init__(
        self, path: Path, *, frames: int = 0, trim: bool = False, mallocstats: bool = False, garbage: bool = False,
    ) -> None:
        self.path = path
        self.garbage = garbage
        self.frames = frames
        self.trim = trim
        self.mallocstats = mallocstats
        self._lock = threading.Lock()
        self._first: tracemalloc.Snapshot | None = None
        self._previous: tracemalloc.Snapshot | None = None
        self._previous_types: Counter[str] | None = None
        self._reports = 0
        if frames > 0 and not tracemalloc.is_tracing():
            tracemalloc.start(frames)

    def report(self) -> str:
        """One report (see the module docstring); also remembered as the next baseline."""
        with self._lock:
            self._reports += 1
            lines = [f"== memtrace report {self._reports} pid {os.getpid()} at {time.time():.3f} "
                     f"rss {rss_bytes() / 1e6:.1f} MB"]
            lines += [line + " (before gc.collect)" for line in _allocator_lines()]
            counts, began = gc.get_count(), time.perf_counter()
            if self.garbage:
                lines += _garbage_lines()
            collected = gc.collect()
            lines.append(f"-- gc.collect(): {collected} unreachable objects freed in "
                         f"{(time.perf_counter() - began) * 1000:.0f} ms (generation counts were {counts}); "
                         f"rss now {rss_bytes() / 1e6:.1f} MB")
            lines += self._type_lines()
            lines += _document_lines()
            lines += _replay_lines()
            if tracemalloc.is_tracing():
                lines += self._site_lines()
            lines += _allocator_lines()
            lines += _server_trim_lines()
            if self.mallocstats:
                lines += _pymalloc_lines()
            if self.trim:
                lines += _trim_lines()
            return "\n".join(lines) + "\n"

    def dump(self) -> None:
        text = self.report()
        with self.path.open("a", encoding="utf-8") as out:
            out.write(text)

    def _type_lines(self) -> list[str]:
        counts: Counter[str] = Counter(_type_name(obj) for obj in gc.get_objects())
        previous, self._previous_types = self._previous_types, counts
        lines = [f"-- objects tracked by gc: {sum(counts.values())}"]
        if previous is None:
            lines += [f"   {count:>10} {name}" for name, count in counts.most_common(TOP_TYPES)]
            return lines
        grown = Counter({name: counts[name] - previous.get(name, 0) for name in counts})
        lines.append("   change since the last report (most grown types):")
        lines += [f"   {change:>+10} {name} (now {counts[name]})"
                  for name, change in grown.most_common(TOP_TYPES) if change > 0]
        return lines

    def _site_lines(self) -> list[str]:
        snapshot = tracemalloc.take_snapshot().filter_traces((
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, linecache.__file__),
            tracemalloc.Filter(False, __file__),
        ))
        current, peak = tracemalloc.get_traced_memory()
        lines = [f"-- tracemalloc: traced {current / 1e6:.1f} MB (peak {peak / 1e6:.1f} MB)"]
        if self._first is None:
            self._first = snapshot
            lines.append("   first snapshot: the baseline for the next reports")
            lines += _stat_lines(snapshot.statistics("lineno")[:TOP_SITES], diff=False)
        else:
            assert self._previous is not None
            lines.append("   grown since the last report (by line):")
            lines += _stat_lines(snapshot.compare_to(self._previous, "lineno")[:TOP_SITES], diff=True)
            lines.append("   grown since the first report (by traceback):")
            lines += _stat_lines(snapshot.compare_to(self._first, "traceback")[:10], diff=True,
                                 tracebacks=True)
        self._previous = snapshot
        return lines


def _type_name(obj: object) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _stat_lines(stats: list[Any], *, diff: bool, tracebacks: bool = False) -> list[str]:
    lines = []
    for stat in stats:
        if diff:
            head = f"   {stat.size_diff / 1e3:>+10.1f} kB {stat.count_diff:>+8} blocks (now {stat.size / 1e3:.1f} kB)"
        else:
            head = f"   {stat.size / 1e3:>10.1f} kB {stat.count:>8} blocks"
        frames = stat.traceback.format() if tracebacks else [str(stat.traceback[0])]
        lines.append(f"{head} {frames[0].strip() if frames else '?'}")
        lines += [f"        {frame.rstrip()}" for frame in frames[1:]]
    return lines


def _document_lines() -> list[str]:
    """Every live pycrdt document and the size of its whole state as one update."""
    try:
        from pycrdt import Doc
    except ImportError:  # pragma: no cover - pycrdt is a dependency
        return []
    sizes = []
    for obj in gc.get_objects():
        if isinstance(obj, Doc):
            with contextlib.suppress(Exception):  # a document mid-transaction cannot be read: skip it
                sizes.append(len(obj.get_update()))
    if not sizes:
        return ["-- pycrdt documents: none"]
    return [f"-- pycrdt documents: {len(sizes)}, encoded state {sum(sizes) / 1e3:.1f} kB in all, "
            f"largest {max(sizes) / 1e3:.1f} kB"]


def _replay_lines() -> list[str]:
    """The rooms' memory logs of turn events (``live.replay``): events and bytes kept per room."""
    from spark_ide.live.replay import ReplayLog

    return [replay_line([obj for obj in gc.get_objects() if isinstance(obj, ReplayLog)])]


def replay_line(logs: list[ReplayLog]) -> str:
    if not logs:
        return "-- replay logs: none"
    kept = sorted(log.kept for log in logs)
    size = sorted(log.bytes for log in logs)
    return (f"-- replay logs: {len(logs)}, events kept per log min {kept[0]} median {kept[len(kept) // 2]} "
            f"max {kept[-1]} ({sum(kept)} in all), counted bytes median {size[len(size) // 2] / 1e3:.1f} kB "
            f"max {size[-1] / 1e3:.1f} kB ({sum(size) / 1e6:.1f} MB in all)")


def _garbage_lines() -> list[str]:
    """What the next collection frees: the unreachable cycles, by type, and the bytes they hold."""
    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = list(gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(flags)
    kinds: Counter[str] = Counter(_type_name(obj) for obj in found)
    held: dict[int, int] = {}
    holders: Counter[str] = Counter()
    for obj in found:
        for ref in gc.get_referents(obj):
            if isinstance(ref, bytes | bytearray | memoryview) and id(ref) not in held:
                held[id(ref)] = sys.getsizeof(ref)
                holders[_type_name(obj)] += sys.getsizeof(ref)
    del found
    lines = [f"-- garbage in cycles: {sum(kinds.values())} objects; bytes objects they hold: "
             f"{sum(held.values()) / 1e6:.1f} MB in {len(held)}"]
    lines += [f"   {size / 1e6:>10.1f} MB held by {name}" for name, size in holders.most_common(8)]
    lines += [f"   {count:>10} {name}" for name, count in kinds.most_common(TOP_TYPES)]
    return lines


def _allocator_lines() -> list[str]:
    if allocator.allocator_name() == "jemalloc":  # glibc's counters would describe an unused heap
        return allocator.allocator_lines()
    info = native_memory.mallinfo()
    if info is None:
        return ["-- glibc allocator: not glibc"]
    return [f"-- glibc allocator: in use {info.in_use / 1e6:.1f} MB, free but kept {info.free / 1e6:.1f} MB "
            f"(top {info.top_pad / 1e6:.1f} MB), arenas {info.arena / 1e6:.1f} MB, mmap-ed {info.mmapped / 1e6:.1f} MB",
            *allocator.allocator_lines()]


def _server_trim_lines() -> list[str]:
    trimmer = native_memory.TRIMMER
    if trimmer is None:
        return ["-- the server's own trims: off"]
    lines = [f"-- the server's own trims (after sockets closed in bulk), the last {len(trimmer.trims)}:"]
    lines += [f"   at {t.at:.3f}: rss {t.rss_before / 1e6:.1f} -> {t.rss_after / 1e6:.1f} MB "
              f"in {t.seconds * 1000:.1f} ms" for t in trimmer.trims]
    return lines


def _trim_lines() -> list[str]:
    trimmed = native_memory.malloc_trim()
    if trimmed is None:
        return ["-- malloc_trim: not glibc"]
    lines = [f"-- malloc_trim(0): rss {trimmed.rss_before / 1e6:.1f} -> {trimmed.rss_after / 1e6:.1f} MB "
             f"({trimmed.given_back / 1e6:+.1f} MB given back) in {trimmed.seconds * 1000:.1f} ms"]
    return lines + _allocator_lines()


def _pymalloc_lines() -> list[str]:
    """``sys._debugmallocstats()`` (it writes to the C stderr: caught through a temp file)."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    keep = [line for line in text.splitlines()
            if line.startswith(("# arenas", "# bytes in", "Total", "# times object malloc"))]
    return ["-- pymalloc (sys._debugmallocstats):"] + [f"   {line}" for line in keep]



_installed: MemTrace | None = None


def install_from_env(environ: dict[str, str] | None = None) -> MemTrace | None:
    """Install the ``SIGUSR1`` report if the environment asks for it (module docstring);
    returns the tracer, or None when tracing is off. Safe to call more than once."""
    global _installed
    env = os.environ if environ is None else environ
    raw_frames = env.get(ENV_TRACEMALLOC, "").strip()
    try:
        frames = int(raw_frames) if raw_frames else 0
    except ValueError:
        raise ValueError(f"{ENV_TRACEMALLOC} must be a number of frames (e.g. 1 or 25), not {raw_frames!r}") from None
    if frames < 0:
        raise ValueError(f"{ENV_TRACEMALLOC} must not be negative")
    if frames == 0 and env.get(ENV_SWITCH, "") not in _ON:
        return None
    if _installed is not None:
        return _installed
    path = Path(env.get(ENV_FILE) or Path(tempfile.gettempdir()) / f"spark-memtrace-{os.getpid()}.txt")
    tracer = MemTrace(path, frames=frames, trim=env.get(ENV_TRIM, "") in _ON,
                      mallocstats=env.get(ENV_MALLOCSTATS, "") in _ON, garbage=env.get(ENV_GARBAGE, "") in _ON)
    signal.signal(signal.SIGUSR1, _on_signal)
    _installed = tracer
    return tracer


def _on_signal(signum: int, frame: FrameType | None) -> None:
    tracer = _installed
    if tracer is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        tracer.dump()
        return
    # Between two callbacks of the loop: no document transaction is open then.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(tracer.dump)
