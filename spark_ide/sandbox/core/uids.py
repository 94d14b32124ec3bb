"""One uid per run, from a reserved range, so one run's processes never count against another's.

Process limits (RLIMIT_NPROC) count per uid and these machines have cgroup v1 only, so a
fork bomb in one run would starve a parallel run that shared its uid. Each run therefore
leases a uid of its own: a lock file per uid, held with ``flock`` for the run's life, works
across threads and processes (a Celery worker's pool) and is released by the kernel when a
holder dies. A uid whose last holder died is swept of leftover processes before reuse.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import signal
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from spark_ide.sandbox.core.limits import SandboxConfigError

DEFAULT_FIRST_UID = 61000
DEFAULT_UID_COUNT = 1000
DEFAULT_LOCK_DIR = Path("/run/spark-sandbox")


class NoFreeUid(RuntimeError):
    """Every uid of the range is running a run: the machine is at its run capacity."""


def processes_of(uid: int) -> list[int]:
    """The live pids whose real uid is ``uid`` (from /proc).

    Zombies are left out: they run nothing and hold nothing but a pid. (A jail's init ends as
    one: bubblewrap's parent exits without reaping it, so the host's init reaps it, which on
    these machines takes up to a second.)
    """
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                head = status.read(1024)
        except OSError:
            continue  # it exited while we looked
        fields = dict(line.split(b":", 1) for line in head.splitlines() if b":" in line)
        state, uids = fields.get(b"State", b"").split(), fields.get(b"Uid", b"").split()
        if uids and int(uids[0]) == uid and state and state[0] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def kill_all_of(uid: int, *, within: float = 5.0) -> bool:
    """SIGKILL every process of ``uid`` until none is left (or ``within`` seconds pass).

    Only for the reserved uids, as root: nothing but a run's own processes ever has them.
    Returns whether the uid is clear.
    """
    if uid == 0 or uid == os.getuid():
        raise SandboxConfigError("refusing to sweep the processes of root or of the caller")
    deadline = time.monotonic() + within
    while True:
        pids = processes_of(uid)
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


@dataclass
class UidLease:
    """A uid held for one run; `release` (or leaving the ``with``) gives it back."""

    uid: int
    _handle: int | None = field(repr=False)

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)  # drops the flock
            self._handle = None

    def __enter__(self) -> UidLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class UidPool:
    """Leases uids ``first .. first + count - 1`` (root only)."""

    def __init__(
        self, *, first: int = DEFAULT_FIRST_UID, count: int = DEFAULT_UID_COUNT, lock_dir: Path = DEFAULT_LOCK_DIR,
    ) -> None:
        if first < 1000 or count < 1 or first + count > 65534:
            raise SandboxConfigError(f"sandbox uid range {first}..{first + count - 1} must lie within 1000..65533")
        self.first = first
        self.count = count
        self.lock_dir = lock_dir

    def _lock_dir(self) -> int:
        """The lock directory, opened; created 0700 for root, refused if anyone else could write in it."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.lock_dir, 0o700)
        handle = os.open(self.lock_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        info = os.fstat(handle)
        if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            os.close(handle)
            raise SandboxConfigError(f"{self.lock_dir} must belong to the server's user and be writable by it alone")
        return handle

    def acquire(self) -> UidLease:
        """Lease a free uid (random start, so parallel workers rarely race for the same one)."""
        folder = self._lock_dir()
        try:
            start = random.randrange(self.count)  # noqa: S311 - spreading, not secrecy
            for step in range(self.count):
                uid = self.first + (start + step) % self.count
                handle = os.open(str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    os.close(handle)
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                        continue
                    raise
                if not kill_all_of(uid):  # a crashed holder's leftovers
                    os.close(handle)
                    continue
                return UidLease(uid, handle)
        finally:
            os.close(folder)
        raise NoFreeUid(f"all {self.count} sandbox uids are in use; try again when a run has finished")
