"""Keeping a workspace document's history for replay; ``workspaces.documents`` calls these
inside its own transactions (the history is written with the document, or not at all).

- When the document is first loaded, its state is the first checkpoint: history starts there.
- When the document is compacted, the updates it folds in move here with the time each was
  persisted (``DocumentUpdate.created_at``), and a checkpoint is written once the updates
  since the last one weigh as much as the document (or number ``CHECKPOINT_UPDATES``): a
  seek applies at most about a document's worth of updates, and checkpoints take about as
  much room as the updates they stand for, or less.

A checkpoint is built from the one before and the updates since, not from the live state
handed to the compaction: that state may already hold changes persisted after ``through``,
and a checkpoint must be the document exactly as it was.

When the room replaces its document by a new one (``documents.document_replace``: fresh
item ids, the old items gone), the new document is one update marked ``fresh``, the whole of
it: nothing before it applies after it. Such an update is as good as a checkpoint, so the
updates that count towards the next one are those since the later of the two, and that
checkpoint is built from the fresh update and the updates after it, not from the old
document.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

from django.db.models import Count, Sum
from django.db.models.functions import Length
from pycrdt import Doc

from spark_ide.workspaces.models import DocumentUpdate

from .models import Checkpoint, HistoryUpdate

CHECKPOINT_UPDATES = 2000  # at most this many updates between checkpoints
CHECKPOINT_MIN_BYTES = 16 * 1024  # and at least this much of them (small documents)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def ms(moment: datetime) -> int:
    """A stored time as ms since the Unix epoch."""
    return int(moment.timestamp() * 1000)


def history_begin(workspace_id: uuid.UUID, doc: Doc[Any], *, through: int) -> None:
    """``doc`` as it is now (holding every update up to ``through``) is where the history
    starts, unless it started already. A replacement (a ``fresh`` update) never waits in the
    live log for this: ``document_replace`` compacts through it at once, so the stored state
    ``doc`` was loaded from is already the new document."""
    if Checkpoint.objects.filter(workspace_id=workspace_id).exists():
        return
    Checkpoint.objects.create(workspace_id=workspace_id, through=through, at=now_ms(), state=doc.get_update())


def history_keep(workspace_id: uuid.UUID, *, through_id: int, state: bytes) -> None:
    """The updates up to ``through_id`` are about to be compacted into ``state``: move them
    into the history, and write a checkpoint when one is due."""
    rows = DocumentUpdate.objects.filter(workspace_id=workspace_id, id__lte=through_id).order_by("id")
    moved = [
        HistoryUpdate(id=pk, workspace_id=workspace_id, at=ms(created), data=bytes(data), fresh=fresh)
        for pk, created, data, fresh in rows.values_list("id", "created_at", "data", "fresh")
    ]
    HistoryUpdate.objects.bulk_create(moved, batch_size=500)
    last = Checkpoint.objects.filter(workspace_id=workspace_id).defer("state").order_by("-through").first()
    if last is None:  # opened live before history was kept: it starts here
        Checkpoint.objects.create(workspace_id=workspace_id, through=through_id, at=now_ms(), state=state)
        return
    since = HistoryUpdate.objects.filter(workspace_id=workspace_id, id__gt=last.through)
    # The latest replacement since the checkpoint, if any: the document starts over there.
    replacement = since.filter(fresh=True).order_by("-id").defer("data").first()
    if replacement is not None:
        since = since.filter(id__gt=replacement.pk)
    size = since.aggregate(count=Count("id"), bytes=Sum(Length("data")))
    if size["count"] < CHECKPOINT_UPDATES and (size["bytes"] or 0) < max(len(state), CHECKPOINT_MIN_BYTES):
        return  # not due (a replacement alone writes none: it is a whole document already)
    doc: Doc[Any] = Doc()
    if replacement is None:
        doc.apply_update(bytes(last.state))
        through, at = last.through, last.at
    else:  # a new Doc: the replaced document's items must not be in it
        doc.apply_update(bytes(replacement.data))  # deferred: read only now a checkpoint is due
        through, at = replacement.pk, max(last.at, replacement.at)
    for pk, when, data in since.order_by("id").values_list("id", "at", "data").iterator():
        doc.apply_update(bytes(data))
        through, at = pk, max(at, when)
    Checkpoint.objects.create(workspace_id=workspace_id, through=through, at=at, state=doc.get_update())


class KeptHistory:
    """``workspaces.ports.History``: the replay app keeps each document's history as it is
    compacted (handed to the workspaces app in ``ReplayConfig.ready``)."""

    def begin(self, workspace_id: uuid.UUID, doc: Doc[Any], *, through: int) -> None:
        history_begin(workspace_id, doc, through=through)

    def keep(self, workspace_id: uuid.UUID, *, through_id: int, state: bytes) -> None:
        history_keep(workspace_id, through_id=through_id, state=state)
