"""Sandbox fixtures: small limits, so the bombs are bounded by limits within a second or two.

These machines have 2 cores: the fork bomb gets 16 processes (not the default 64) and a wall
limit of 2 s, so even a contained bomb takes little from the other test runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_ide.sandbox.core import Limits, RunResult, Sandbox
from spark_ide.sandbox.core.limits import MB
from spark_ide.sandbox.core.uids import processes_of
from tests.conftest import require

AS_ROOT = os.geteuid() == 0
SMALL = Limits(cpu_seconds=5, wall_seconds=5, processes=16, disk_bytes=8 * MB)


@pytest.fixture
def sandbox() -> Sandbox:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (make sandbox-runtime installs it)")
    return Sandbox(limits=SMALL)


def live_processes(uid: int) -> list[str]:
    """Processes of ``uid`` that still run, as ``ps`` sees them (zombies, already dead, left out)."""
    done = subprocess.run(["ps", "-u", str(uid), "-o", "pid=,stat=,comm="], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if line.split()[1][0] not in "ZX"]


def run_processes(uid: int) -> list[int]:
    """The live processes of ``uid`` that are a run's: every run (jailed or not) has the whole
    environment ``child_env`` gives it, and nothing else of the user's says ``USER=student``."""
    marker = b"\0USER=student\0"
    found: list[int] = []
    for pid in processes_of(uid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # it ended while we looked
        if marker in b"\0" + environ:
            found.append(pid)
    return found


def assert_gone(result: RunResult) -> None:
    """Nothing of the run is left running, checked from outside. As root the run had a uid of
    its own: no process of that uid is left (ps). Otherwise the run was this user's: none of
    this user's processes carries a run's environment (tests run one at a time in a process;
    runs of another test process of the same user at the same time would count too)."""
    if AS_ROOT:
        assert result.uid != 0
        assert live_processes(result.uid) == []
    else:
        assert result.uid == os.getuid()
        assert run_processes(result.uid) == []


Runner = Callable[..., RunResult]


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` (made true by a run's output thread) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def source(*lines: str) -> dict[str, str]:
    return {"main.py": "\n".join(lines) + "\n"}
