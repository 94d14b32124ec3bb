"""``live.pipeline.Pipeline.put_replace``: a replacement is one point in the room's ordered way
out. What came before is saved and sent first; the old document's updates queued behind it
(which the new document holds already) are neither saved nor sent; events behind it go out
before ``document.replaced``; and when the new document cannot be saved, or the room does
not take it, everything goes on as if nothing had been asked."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from pycrdt import Doc, Text

from spark_ide.live.events import DocumentReplaced, Presence
from spark_ide.live.outbox import Frame
from spark_ide.live.pipeline import Replacement
from tests.support.pipeline_rig import bare_pipeline


class Store:
    """What the pipeline writes, in order; a replacement that waits for the test to let it."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Any]] = []
        self.saving = asyncio.Event()
        self.may_save = asyncio.Event()
        self.refuse = False

    async def append_update(self, update: bytes) -> int:
        self.writes.append(("update", update))
        return len(self.writes)

    async def replace_document(self, state: bytes, *, generation: int, previous: bytes | None) -> None:
        self.saving.set()
        await self.may_save.wait()
        if self.refuse:
            raise OSError("the database went away")
        self.writes.append(("replace", (state, generation)))

    async def write_files(self, texts: Any, current: Any = None) -> bool:
        return True

    async def append_events(self, events: Any) -> None:
        return None


class Transport:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def frame(self, frame: Frame) -> None:
        self.sent.append(frame.event)

    def update(self, update: bytes) -> None:
        self.sent.append(update)


def _update(text: str) -> bytes:
    """A real Yjs update (the pipeline merges the updates of a batch)."""
    doc: Doc[Any] = Doc()
    doc["t"] = Text(text)
    return doc.get_update()


BEFORE, BEHIND, WHILE = _update("before"), _update("queued-behind"), _update("while-saved")


def _replacement() -> Replacement:
    return Replacement(generation=1, state=b"new", previous=b"old", doc=Doc(), texts={})


async def _run(store: Store, transport: Transport, *, swap: bool) -> list[Any]:
    pipeline = bare_pipeline(store, transport, state=b"room-state")
    swapped: list[bool] = []

    def take(replacement: Replacement) -> bool:
        swapped.append(swap)
        return swap

    pipeline.put_update(BEFORE)
    pipeline.put_replace(_replacement, take)
    pipeline.put_update(BEHIND)  # of the old document: the new one holds it
    pipeline.put_frame(Frame(Presence(participants=()), 7))
    pipeline.start()
    await asyncio.wait_for(store.saving.wait(), 2)
    pipeline.put_update(WHILE)  # the room carries it into the new one as text
    store.may_save.set()
    await pipeline.close()
    return swapped


async def test_a_replacement_is_one_point_in_the_stream() -> None:
    store, transport = Store(), Transport()
    assert await _run(store, transport, swap=True) == [True]
    assert store.writes == [("update", BEFORE), ("replace", (b"new", 1))]
    assert transport.sent[0] == BEFORE and isinstance(transport.sent[1], Presence)
    # The room's document as it is once it took the new one (what came meanwhile carried in).
    assert transport.sent[2] == DocumentReplaced(generation=1, state=base64.b64encode(b"room-state").decode())
    assert len(transport.sent) == 3  # neither old update behind it went out


async def test_a_replacement_not_saved_or_not_taken_changes_nothing() -> None:
    store, transport = Store(), Transport()
    store.refuse = True
    await _run(store, transport, swap=True)
    saved = b"".join(write for kind, write in store.writes if kind == "update")
    assert saved.count(b"before") == 1 and b"queued-behind" in saved and b"while-saved" in saved
    assert not any(isinstance(sent, DocumentReplaced) for sent in transport.sent)

    store, transport = Store(), Transport()
    assert await _run(store, transport, swap=False) == [False]  # a turn began while it was saved
    kinds = [kind for kind, _ in store.writes]
    assert kinds[:2] == ["update", "replace"] and store.writes[2] == ("replace", (b"room-state", 0))
    assert not any(isinstance(sent, DocumentReplaced) for sent in transport.sent)
    sent = b"".join(update for update in transport.sent if isinstance(update, bytes))
    assert b"queued-behind" in sent and b"while-saved" in sent
