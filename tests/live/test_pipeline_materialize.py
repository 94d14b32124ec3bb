"""The file rows follow the document, at a cost kept to a share of the database's time: a
refresh writes every file's whole text (a file the model is writing grows to megabytes), so
the next one waits ``MATERIALIZE_SPACING`` times as long as the last one took."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from spark_ide.live.pipeline import MATERIALIZE_SPACING
from tests.live.test_pipeline_replace import Store, Transport, _update
from tests.support.pipeline_rig import bare_pipeline


class SlowFiles(Store):
    """Every refresh of the file rows takes ``took`` seconds; when each began is kept."""

    def __init__(self, took: float) -> None:
        super().__init__()
        self.took = took
        self.refreshes: list[float] = []

    async def write_files(self, texts: Any, current: Any = None) -> bool:
        self.refreshes.append(time.monotonic())
        await asyncio.sleep(self.took)
        return True


async def _refreshes_while_writing(store: SlowFiles, seconds: float) -> list[float]:
    pipeline = bare_pipeline(
        store, Transport(), state=b"state", texts=lambda: {"big.json": "x"}, materialize_after_s=0.01,
    )
    pipeline.start()
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:  # a model writing: an update every 5 ms
        pipeline.put_update(_update("line"))
        await asyncio.sleep(0.005)
    refreshes = list(store.refreshes)  # the close writes the rows once more, at once
    await pipeline.close()
    return refreshes


async def test_a_slow_refresh_spaces_out_the_next() -> None:
    refreshes = await _refreshes_while_writing(SlowFiles(took=0.04), seconds=1.2)
    gaps = [b - a for a, b in itertools.pairwise(refreshes)]
    assert gaps, refreshes
    assert min(gaps) >= MATERIALIZE_SPACING * 0.04 * 0.9  # timers may fire a hair early
    assert len(refreshes) <= 1.2 / (MATERIALIZE_SPACING * 0.04) + 2


async def test_a_quick_refresh_keeps_the_rows_close_behind() -> None:
    refreshes = await _refreshes_while_writing(SlowFiles(took=0.0), seconds=0.5)
    assert len(refreshes) >= 10  # every 10 ms or so, as the setting says


class HeldFiles(Store):
    """A refresh that waits for ``release`` before it asks ``current()`` and keeps the texts only
    if it says yes (as ``files_materialize`` does inside its transaction)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.seen: list[dict[str, str]] = []
        self.kept: list[dict[str, str]] = []

    async def write_files(self, texts: Any, current: Any = lambda: True) -> bool:
        self.seen.append(dict(texts))
        await self.release.wait()
        if not current():
            return False
        self.kept.append(dict(texts))
        return True


async def test_a_refresh_that_an_http_change_overtook_keeps_nothing_and_reads_the_texts_again() -> None:
    """A change over HTTP writes its file row, then the document: a refresh that read the texts
    before it must not write them over that row (the row of a renamed file would go, for a
    moment, and "no file" answer the next request)."""
    store = HeldFiles()
    texts = {"a.py": "old\n"}
    http = [0, 0]  # RoomFiles.http_changes: (begun, done)
    pipeline = bare_pipeline(
        store, Transport(), state=b"s", texts=lambda: dict(texts), http_changes=lambda: (http[0], http[1]),
        materialize_after_s=0.01,
    )
    pipeline.start()
    pipeline.put_update(_update("x"))
    while not store.seen:
        await asyncio.sleep(0.005)
    # A rename over HTTP begins (its row is written), then reaches the document.
    http[0] += 1
    texts.pop("a.py")
    texts["b.py"] = "old\n"
    http[1] += 1
    store.release.set()
    while not store.kept:
        await asyncio.sleep(0.005)
    assert store.seen[0] == {"a.py": "old\n"}  # read before the rename, and not kept
    assert store.kept == [{"b.py": "old\n"}]  # read again after it, and kept
    await pipeline.close()


async def test_no_refresh_reads_the_texts_while_an_http_change_is_on_its_way() -> None:
    store = HeldFiles()
    store.release.set()
    texts = {"a.py": "1\n"}
    http = [1, 0]  # begun, not yet in the document
    pipeline = bare_pipeline(
        store, Transport(), state=b"s", texts=lambda: dict(texts), http_changes=lambda: (http[0], http[1]),
        materialize_after_s=0.01,
    )
    pipeline.start()
    pipeline.put_update(_update("x"))
    await asyncio.sleep(0.1)
    assert store.seen == []  # asked again and again, never read while one is on its way
    texts["a.py"] = "2\n"
    http[1] += 1
    while not store.kept:
        await asyncio.sleep(0.005)
    assert store.kept[0] == {"a.py": "2\n"}
    await pipeline.close()
