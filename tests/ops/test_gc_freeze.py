"""Start-up's objects are moved out of the collector's full passes (``gc.freeze``), unless
``SPARK_GC_FREEZE=0``; the ASGI module does it once it has built the application, and sets
the collector's thresholds (``SPARK_GC_THRESHOLDS``, else Python's own)."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from spark_ide.ops.gc_freeze import THRESHOLDS, freeze_startup_objects, set_thresholds


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


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_thresholds_are_pythons_unless_set(thresholds: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_GC_THRESHOLDS", raising=False)
    gc.set_threshold(1, 2, 3)
    set_thresholds()
    assert gc.get_threshold() == THRESHOLDS == (700, 10, 10)
    monkeypatch.setenv("SPARK_GC_THRESHOLDS", "700,10,1000")  # full passes minutes apart (memory grows)
    set_thresholds()
    assert gc.get_threshold() == (700, 10, 1000)


@pytest.mark.parametrize("value", ["700,10", "a,b,c", "700,10,-1", "700;10;10"])
def test_a_bad_threshold_setting_is_refused_and_changes_nothing(
    thresholds: None, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    before = gc.get_threshold()
    monkeypatch.setenv("SPARK_GC_THRESHOLDS", value)
    with pytest.raises(ValueError, match="SPARK_GC_THRESHOLDS must be three whole numbers"):
        set_thresholds()
    assert gc.get_threshold() == before


def test_the_asgi_application_sets_the_thresholds() -> None:
    code = "import gc, spark_ide.asgi; print(*gc.get_threshold())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert tuple(map(int, done.stdout.split()[-3:])) == THRESHOLDS
