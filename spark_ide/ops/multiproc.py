"""The directory where every IDE process of a host keeps its metrics (prometheus_client's
multiprocess mode), and the rules that keep it right across restarts.

prometheus_client reads ``PROMETHEUS_MULTIPROC_DIR`` from the environment when it is imported
and writes one memory-mapped file per process and metric kind into it; a scrape sums them.
So:

- the directory is fixed in the environment by the settings, before anything imports
  prometheus_client (``PROMETHEUS_MULTIPROC_DIR`` when set, else ``<SPARK_DATA_DIR>/prometheus``);
- files left by an earlier run would count again: the first process to start after every
  process of the last run has gone removes them. Each process holds a shared ``flock`` on
  ``.processes.lock`` while it lives (the kernel lets go of it when a process dies, however it
  dies); a process that gets the lock exclusively at start knows it is alone;
- a process that is gone no longer has sockets or rooms: before each scrape, the live gauges of
  processes that no longer exist are removed (counters and histograms keep counting them).

No Django here: the settings and the ops app call it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
from pathlib import Path
from typing import IO

ENV = "PROMETHEUS_MULTIPROC_DIR"
LOCK_NAME = ".processes.lock"
_LIVE_GAUGE = re.compile(r"^gauge_live\w*_(\d+)\.db$")

_held: dict[Path, IO[bytes]] = {}  # the lock each directory this process takes part in


def configure(data_dir: Path) -> Path:
    """The metrics directory of this host, put in the environment for prometheus_client."""
    raw = os.environ.get(ENV, "").strip()
    path = Path(raw) if raw else data_dir / "prometheus"
    os.environ[ENV] = str(path)
    return path


def take_part(directory: Path) -> bool:
    """Join the processes writing metrics into ``directory`` (once per process); returns True
    when this process came first and cleared what an earlier run left."""
    directory = directory.resolve()
    if directory in _held:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    lock = (directory / LOCK_NAME).open("ab")
    first = False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # others are running: their files are live
    else:
        first = True
        mine = f"_{os.getpid()}.db"
        for stale in directory.glob("*.db"):
            if not stale.name.endswith(mine):
                stale.unlink(missing_ok=True)
    fcntl.flock(lock, fcntl.LOCK_SH)  # held (shared) until this process ends
    _held[directory] = lock
    atexit.register(_leave, directory, os.getpid())
    return first


def forget_dead(directory: Path) -> list[int]:
    """Remove the live gauges (rooms, sockets) of processes that no longer exist; returns
    their pids."""
    dead = []
    for path in directory.glob("gauge_live*.db"):
        found = _LIVE_GAUGE.match(path.name)
        if found and not alive(int(found.group(1))):
            path.unlink(missing_ok=True)
            dead.append(int(found.group(1)))
    return sorted(set(dead))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but it exists
    return True


def _leave(directory: Path, pid: int) -> None:
    """At a clean exit: this process's live gauges go (a crash leaves them to ``forget_dead``)."""
    if pid != os.getpid():
        return  # a forked child inherited the hook; the parent's files are not its own
    for path in directory.glob(f"gauge_live*_{pid}.db"):
        with contextlib.suppress(OSError):
            path.unlink()
