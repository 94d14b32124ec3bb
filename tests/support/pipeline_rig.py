"""A room's pipeline (``live.pipeline.Pipeline``) on its own, over a test's store and transport:
no model, no retries of a failed write, failures and recoveries ignored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from spark_ide.live.pipeline import Pipeline
from spark_ide.live.store import LiveSettings


async def _no_model(_: str) -> Any:
    raise AssertionError("no model here")


def bare_pipeline(
    store: Any, transport: Any, *, state: bytes = b"", texts: Callable[[], Mapping[str, str]] = dict,
    http_changes: Callable[[], tuple[int, int]] = lambda: (0, 0), **settings: Any,
) -> Pipeline:
    """``settings``: more ``LiveSettings`` fields (``materialize_after_s``, ...);
    ``http_changes``: what ``RoomFiles.http_changes`` would say."""
    return Pipeline(
        store=store, transport=transport,
        settings=LiveSettings(connect_model=_no_model, persist_retries=(), **settings),
        document_state=lambda: state, texts=texts, on_failed=lambda exc: None, on_recovered=lambda: None,
        http_changes=http_changes,
    )
