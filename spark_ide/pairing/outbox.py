"""Each connection's outbound buffer: one frame per ~16 ms, merged, bounded, never a gap.

Daphne has no write backpressure, and a viewer on a slow link must not slow the Pilot nor
grow memory without bound. So a connection does not get every event as it happens: events
wait here, are sent together at most once per 8 ms, and when too many wait they are merged
— text deltas of a turn are concatenated, Yjs updates are merged into one, an unfinished
block's progress is replaced by its newer progress. Nothing is dropped: the client ends up
with the same transcript text, the same document and every final status.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pycrdt import create_update_message, merge_updates

FRAME_S = 0.008  # half a 60 Hz frame: ~4 ms added on average, browsers apply per frame
MAX_PENDING = 256
NON_FINAL_STATES = {"locating", "streaming"}


@dataclass
class _Update:
    data: bytes


@dataclass
class _Raw:
    data: bytes


Item = dict[str, Any] | _Update | _Raw


def _merge_into(target: dict[str, Any], event: dict[str, Any]) -> bool:
    """Fold ``event`` into ``target`` when one can stand for both."""
    if target["type"] == event["type"] and target["type"] in ("turn.delta", "turn.prose") and target["turn"] == event["turn"]:
        target["text"] += event["text"]
        target["seq"] = event["seq"]
        return True
    if (
        target["type"] == event["type"] == "edit.status"
        and (target["turn"], target["block"]) == (event["turn"], event["block"])
        and target["state"] in NON_FINAL_STATES
    ):
        target.clear()
        target.update(event)
        return True
    return False


class Outbox:
    def __init__(
        self,
        send_text: Callable[[str], Awaitable[None]],
        send_bytes: Callable[[bytes], Awaitable[None]],
        *,
        frame_s: float = FRAME_S,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._frame_s = frame_s
        self._max_pending = max_pending
        self._pending: list[Item] = []
        self._wake = asyncio.Event()
        self._last_flush = 0.0

    def put_event(self, event: dict[str, Any]) -> None:
        event = dict(event)
        if self._pending and isinstance(self._pending[-1], dict) and _merge_into(self._pending[-1], event):
            return
        self._pending.append(event)
        self._after_put()

    def put_update(self, update: bytes) -> None:
        """A Yjs document update (sent as a y-protocols sync update message)."""
        if self._pending and isinstance(self._pending[-1], _Update):
            self._pending[-1].data = merge_updates(self._pending[-1].data, update)
            return
        self._pending.append(_Update(update))
        self._after_put()

    def put_raw(self, message: bytes) -> None:
        """A binary message sent as it is (sync steps, awareness)."""
        self._pending.append(_Raw(message))
        self._after_put()

    def _after_put(self) -> None:
        if len(self._pending) > self._max_pending:
            self._compact()
        self._wake.set()

    def _compact(self) -> None:
        """Merge across the whole queue; order of deltas, updates and final statuses is kept."""
        merged: list[Item] = []
        delta_at: dict[str, dict[str, Any]] = {}
        status_at: dict[tuple[str, int], dict[str, Any]] = {}
        update: _Update | None = None
        for item in self._pending:
            if isinstance(item, _Update):
                if update is None:
                    update = item
                    merged.append(item)
                else:
                    update.data = merge_updates(update.data, item.data)
                continue
            if isinstance(item, dict):
                if item["type"] == "turn.delta" and item["turn"] in delta_at:
                    _merge_into(delta_at[item["turn"]], item)
                    continue
                key = (item.get("turn", ""), item.get("block", -1))
                if item["type"] == "edit.status" and key in status_at and _merge_into(status_at[key], item):
                    continue
                if item["type"] == "turn.delta":
                    delta_at[item["turn"]] = item
                elif item["type"] == "edit.status":
                    status_at[key] = item
                elif item["type"] == "turn.finished":
                    # Nothing of a finished turn may be moved behind its end.
                    delta_at.pop(item["turn"], None)
                    status_at = {k: v for k, v in status_at.items() if k[0] != item["turn"]}
            merged.append(item)
        self._pending = merged

    async def run(self) -> None:
        """Send what waits, at most once per frame, until cancelled."""
        while True:
            await self._wake.wait()
            wait = self._last_flush + self._frame_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()
            batch, self._pending = self._pending, []
            self._last_flush = time.monotonic()
            for item in batch:
                if isinstance(item, dict):
                    await self._send_text(json.dumps(item, separators=(",", ":")))
                elif isinstance(item, _Update):
                    await self._send_bytes(create_update_message(item.data))
                else:
                    await self._send_bytes(item.data)
