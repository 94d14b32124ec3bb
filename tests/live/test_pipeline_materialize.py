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

    async def write_files(self, texts: Any) -> None:
        self.refreshes.append(time.monotonic())
        await asyncio.sleep(self.took)


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
