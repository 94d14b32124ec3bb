"""Opt-in memory tracing of a running server process: what still grows (issue 12).

Nothing happens unless the environment asks for it, so the hook can stay wired in
production code:

* ``SPARK_MEMTRACE=1``: on ``SIGUSR1`` append a report to ``SPARK_MEMTRACE_FILE`` (default
  ``<tmp>/spark-memtrace-<pid>.txt``): RSS, live objects counted by type and their change
  since the previous report, and every live pycrdt document with the size of its encoded
  state (a document keeps deleted items as tombstones, which Python's allocator never sees).
* ``SPARK_TRACEMALLOC=N`` (N >= 1, frames per trace): the same, and ``tracemalloc`` is started
  at install time with N frames; each report then lists the allocation sites that grew most
  since the previous report and since the first one. Tracing slows the process down (about
  2x): use it to find a cause, not to measure speed.

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
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ENV_SWITCH = "SPARK_MEMTRACE"
ENV_TRACEMALLOC = "SPARK_TRACEMALLOC"
ENV_FILE = "SPARK_MEMTRACE_FILE"
TOP_SITES = 25
TOP_TYPES = 30


class MemTrace:
    """The state kept between two reports of one process."""

    def __init__(self, path: Path, *, frames: int = 0) -> None:
        self.path = path
        self.frames = frames
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
            gc.collect()
            lines += self._type_lines()
            lines += _document_lines()
            if tracemalloc.is_tracing():
                lines += self._site_lines()
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
    if frames == 0 and env.get(ENV_SWITCH, "") not in {"1", "true", "yes", "on"}:
        return None
    if _installed is not None:
        return _installed
    path = Path(env.get(ENV_FILE) or Path(tempfile.gettempdir()) / f"spark-memtrace-{os.getpid()}.txt")
    tracer = MemTrace(path, frames=frames)
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
