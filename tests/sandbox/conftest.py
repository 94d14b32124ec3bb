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

import pytest

from spark_ide.sandbox.core import Limits, RunResult, Sandbox
from spark_ide.sandbox.core.limits import MB
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


def assert_gone(result: RunResult) -> None:
    """Nothing of the run is left running (checked from outside, with ps)."""
    if AS_ROOT:
        assert result.uid != 0
        assert live_processes(result.uid) == []


Runner = Callable[..., RunResult]


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` (made true by a run's output thread) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def source(*lines: str) -> dict[str, str]:
    return {"main.py": "\n".join(lines) + "\n"}
