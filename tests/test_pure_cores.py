"""The pure cores import no Django (nor Channels or Celery): they run from a CLI as they are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = """
import importlib, pkgutil, sys
import spark_ide.{core} as core
for info in pkgutil.walk_packages(core.__path__, "spark_ide.{core}."):
    if not info.name.endswith("__main__"):  # importing that one runs the program
        importlib.import_module(info.name)
print(sorted(k for k in sys.modules if k.split(".")[0] in ("django", "channels", "celery", "daphne")))
"""


@pytest.mark.parametrize("core", ["editing", "upstream", "live", "modelserver", "sandbox.core", "guard"])
def test_a_pure_core_imports_no_django(core: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(core=core)], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# The Pilot's tests without Django (tests/live/test_pilot_*.py) and what they run on: the room's
# storage in memory and the rigs around the Pilot and the room.
PILOT_TESTS = [
    "tests.support.memory_store", "tests.support.pilot_rig", "tests.support.room_rig",
    "tests.live.test_pilot_turns", "tests.live.test_pilot_steer", "tests.live.test_pilot_failures",
    "tests.live.test_pilot_halts", "tests.live.test_pilot_models",
]
CHECK_MODULES = """
import importlib, sys
for name in {names!r}:
    importlib.import_module(name)
print(sorted(k for k in sys.modules if k.split(".")[0] in ("django", "channels", "celery", "daphne")))
"""


def test_the_pilot_tests_and_the_memory_store_import_no_django() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK_MODULES.format(names=PILOT_TESTS)], cwd=ROOT, capture_output=True, text=True,
        timeout=60, env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
