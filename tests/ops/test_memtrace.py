"""spark_ide.ops.memtrace: off unless asked; a report counts objects by type, lists the live
pycrdt documents and, with tracemalloc, the allocation sites that grew; SIGUSR1 writes one."""

from __future__ import annotations

import os
import signal
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from pycrdt import Doc, Text

from spark_ide.live.events import TurnDelta
from spark_ide.live.outbox import Frame
from spark_ide.live.replay import ReplayLog, kept_bytes
from spark_ide.live.store import LiveSettings
from spark_ide.ops import memtrace
from tests.support.fake_model import FakeModel
from tests.support.memory_store import MemoryRoomStore


class Growing:
    """A type only this test makes, so its count change is unambiguous."""


@pytest.fixture(autouse=True)
def _uninstalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(memtrace, "_installed", None)
    previous = signal.getsignal(signal.SIGUSR1)
    yield
    signal.signal(signal.SIGUSR1, previous)


def test_nothing_is_installed_unless_the_environment_asks() -> None:
    assert memtrace.install_from_env({}) is None
    assert memtrace.install_from_env({"SPARK_MEMTRACE": "0"}) is None
    with pytest.raises(ValueError, match="SPARK_TRACEMALLOC"):
        memtrace.install_from_env({"SPARK_TRACEMALLOC": "lots"})


def test_a_report_shows_what_grew_and_the_documents(tmp_path: Path) -> None:
    tracer = memtrace.MemTrace(tmp_path / "trace.txt")
    doc: Doc[Text] = Doc()
    doc["t"] = Text("x" * 5000)
    first = tracer.report()
    assert "rss" in first and "pycrdt documents: " in first
    kept = [Growing() for _ in range(1234)]
    second = tracer.report()
    assert f"+{len(kept)} {__name__}.Growing (now {len(kept)})" in " ".join(second.split())
    assert "encoded state" in second


def test_a_report_shows_the_rooms_replay_logs(tmp_path: Path) -> None:
    settings = LiveSettings(connect_model=FakeModel().connect)
    logs = [ReplayLog(store=MemoryRoomStore(), settings=settings, sent=lambda: 0, stored=lambda: 0,
                      running=lambda: None) for _ in range(3)]
    for count, log in enumerate(logs, start=1):
        for seq in range(1, count * 10 + 1):
            log.keep(Frame(TurnDelta(turn="t1", text="x" * 100), seq))
    per_frame = kept_bytes(TurnDelta(turn="t1", text="x" * 100))
    assert memtrace.replay_line(logs) == (
        f"-- replay logs: 3, events kept per log min 10 median 20 max 30 (60 in all), counted bytes "
        f"median {20 * per_frame / 1e3:.1f} kB max {30 * per_frame / 1e3:.1f} kB ({60 * per_frame / 1e6:.1f} MB in all)"
    )
    assert memtrace.replay_line([]) == "-- replay logs: none"
    # A report finds them (with any other test's log still alive in this process).
    line = next(line for line in memtrace.MemTrace(tmp_path / "trace.txt").report().splitlines()
                if line.startswith("-- replay logs"))
    assert int(line.split()[3].rstrip(",")) >= len(logs)


def test_sigusr1_appends_a_report_with_allocation_sites(tmp_path: Path) -> None:
    path = tmp_path / "trace.txt"
    tracer = memtrace.install_from_env({"SPARK_TRACEMALLOC": "1", "SPARK_MEMTRACE_FILE": str(path)})
    assert tracer is not None and tracer.path == path
    try:
        os.kill(os.getpid(), signal.SIGUSR1)  # no running loop here: written in the handler
        kept = [bytearray(1000) for _ in range(2000)]
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while path.read_text().count("== memtrace report") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        text = path.read_text()
        assert text.count("== memtrace report") == 2
        assert "tracemalloc: traced" in text and "grown since the last report" in text
        assert "test_memtrace.py" in text.split("grown since the last report")[1]
        assert len(kept) == 2000
    finally:
        tracemalloc.stop()
