"""The uid pool: one uid per run across threads and processes, swept of a crashed run's leftovers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spark_ide.sandbox.core import NoFreeUid, UidPool, processes_of
from tests.sandbox.conftest import AS_ROOT, live_processes

pytestmark = pytest.mark.skipif(not AS_ROOT, reason="uids are leased only when the server is root")

FIRST = 62990  # outside the default range (61000-61999): these pools have lock dirs of their own


def test_leases_never_share_a_uid_and_come_back(tmp_path: Path) -> None:
    pool = UidPool(first=FIRST, count=3, lock_dir=tmp_path / "locks")
    leases = [pool.acquire() for _ in range(3)]
    assert sorted(lease.uid for lease in leases) == [FIRST, FIRST + 1, FIRST + 2]
    with pytest.raises(NoFreeUid, match="all 3 sandbox uids are in use"):
        pool.acquire()
    leases[1].release()
    with pool.acquire() as again:
        assert again.uid == leases[1].uid
    for lease in leases:
        lease.release()


def test_another_process_holding_a_uid_is_respected(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    holder = subprocess.Popen(  # another worker process: holds FIRST's lock until told to stop
        ["/usr/bin/python3", "-c",
         "import fcntl, os, sys\n"
         f"os.makedirs({str(locks)!r}, 0o700, exist_ok=True)\n"
         f"handle = os.open({str(locks / str(FIRST))!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(handle, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with UidPool(first=FIRST, count=2, lock_dir=locks).acquire() as lease:
            assert lease.uid == FIRST + 1
    finally:
        holder.communicate("", timeout=10)


def test_a_crashed_runs_leftover_processes_are_killed_before_reuse(tmp_path: Path) -> None:
    leftover = subprocess.Popen(["/usr/bin/sleep", "60"], user=FIRST, group=FIRST, extra_groups=[])
    try:
        assert processes_of(FIRST) == [leftover.pid]
        with UidPool(first=FIRST, count=1, lock_dir=tmp_path / "locks").acquire() as lease:
            assert lease.uid == FIRST
            assert leftover.wait(timeout=5) == -9
            assert live_processes(FIRST) == []
    finally:
        leftover.kill()
        leftover.wait()
