"""The replay tests drive real rooms with the pairing tests' fixtures (the ASGI app, the
scripted model server), and read what the room stored."""

from __future__ import annotations

import base64
import bisect
import dataclasses
from typing import Any

import pytest
from pycrdt import Doc

from spark_ide.editing.document import document_texts
from spark_ide.pairing import adapter
from spark_ide.replay import history
from tests.pairing.conftest import live, model_server, rooms

__all__ = ["compact_often", "document_at", "document_holding", "live", "model_server", "rooms"]


@pytest.fixture
def compact_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rooms compact their document every 3 updates, and the history writes a checkpoint
    every 4 updates or more: a short turn goes through several of each."""
    settings = adapter.live_settings
    monkeypatch.setattr(adapter, "live_settings", lambda: dataclasses.replace(settings(), compact_every=3))
    monkeypatch.setattr(history, "CHECKPOINT_UPDATES", 4)


def document_at(data: dict[str, Any], at: int) -> dict[str, str]:
    """The files of a replay (``replay_data``) at ``at`` (ms since the Unix epoch)."""
    times = [update[0] for update in data["updates"]]
    return document_holding(data, bisect.bisect_right(times, at - data["start"]))


def document_holding(data: dict[str, Any], count: int) -> dict[str, str]:
    """The files of a replay once its first ``count`` updates happened."""
    return document_texts(document_rebuilt(data, count))


def document_rebuilt(data: dict[str, Any], count: int) -> Doc[Any]:
    """The document of a replay once its first ``count`` updates happened, rebuilt as the replay
    page does: from the latest checkpoint or fresh update (``[t, state, 1]``: a replacement)
    among them, then the updates after it."""
    starts = [(checkpoint["n"], checkpoint["state"]) for checkpoint in data["checkpoints"] if checkpoint["n"] <= count]
    starts += [(i + 1, update[1]) for i, update in enumerate(data["updates"][:count]) if update[2:] == [1]]
    n, state = max(starts, key=lambda start: start[0])
    doc: Doc[Any] = Doc()
    doc.apply_update(base64.b64decode(state))
    for update in data["updates"][n:count]:
        doc.apply_update(base64.b64decode(update[1]))
    return doc
