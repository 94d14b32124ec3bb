"""Start-up's objects are moved out of the collector's full passes (``gc.freeze``), unless
``SPARK_GC_FREEZE=0``; the ASGI module does it once it has built the application."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from spark_ide.ops.gc_freeze import freeze_startup_objects


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_it_freezes_what_is_there(unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_GC_FREEZE", raising=False)
    freeze_startup_objects()
    assert gc.get_freeze_count() > 1000


def test_it_can_be_turned_off(unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_GC_FREEZE", "0")
    freeze_startup_objects()
    assert gc.get_freeze_count() == 0


def test_the_asgi_application_is_built_with_start_up_frozen() -> None:
    code = "import gc, spark_ide.asgi; print(gc.get_freeze_count())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert int(done.stdout.split()[-1]) > 10_000  # Django, Channels, Twisted and ours
