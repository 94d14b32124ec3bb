"""Checkpoints in the database (``live.checkpoints``): saved content-addressed, loaded whole,
listed for the history panel, pruned to the newest ``keep`` with the blobs they use."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Sum
from django.db.models.functions import Length

from spark_ide.live.checkpoints import (
    Checkpoint,
    CheckpointKind,
    Saved,
    addressed,
    rebuilt,
    referenced,
    unreferenced,
)

from .models import Checkpoint as CheckpointRow
from .models import CheckpointBlob

PANEL_SHOWN = 30  # checkpoints the history panel lists, the newest


def checkpoint_save(workspace_id: uuid.UUID, checkpoint: Checkpoint, *, keep: int) -> Saved:
    """Store ``checkpoint`` (in the caller's transaction): only its blobs the workspace does
    not hold yet are written; then the oldest beyond ``keep`` go, and the blobs no kept
    checkpoint refers to."""
    stored = addressed(checkpoint)
    blobs = CheckpointBlob.objects.filter(workspace_id=workspace_id)
    have = set(blobs.filter(key__in=list(stored.blobs)).values_list("key", flat=True))
    new = {key: text for key, text in stored.blobs.items() if key not in have}
    CheckpointBlob.objects.bulk_create(
        [CheckpointBlob(workspace_id=workspace_id, key=key, text=text) for key, text in new.items()],
        ignore_conflicts=True,
    )
    CheckpointRow.objects.create(
        checkpoint=checkpoint.id, workspace_id=workspace_id, kind=checkpoint.kind.value, turn=checkpoint.turn,
        prompt=checkpoint.prompt, name=checkpoint.name, author_id=checkpoint.author_id,
        author_name=checkpoint.author, files=stored.files, history=stored.history, ledger=checkpoint.ledger,
        at=checkpoint.at,
    )
    _prune(workspace_id, keep)
    return Saved(blobs=len(new), bytes=sum(len(text.encode()) for text in new.values()))


def _prune(workspace_id: uuid.UUID, keep: int) -> None:
    mine = CheckpointRow.objects.filter(workspace_id=workspace_id)
    old = list(mine.order_by("-pk").values_list("pk", flat=True)[keep:])
    if not old:
        return
    pruned = mine.filter(pk__in=old)
    candidates: set[str] = set()
    for files, history in pruned.values_list("files", "history"):
        candidates |= referenced(files, history)
    pruned.delete()
    kept = (referenced(files, history) for files, history in mine.order_by("-pk").values_list("files", "history"))
    gone = unreferenced(candidates, kept)
    if gone:
        CheckpointBlob.objects.filter(workspace_id=workspace_id, key__in=list(gone)).delete()


def checkpoint_load(workspace_id: uuid.UUID, checkpoint_id: str) -> Checkpoint | None:
    """The workspace's checkpoint ``checkpoint_id``, whole; None when it has none of that id."""
    row = CheckpointRow.objects.filter(workspace_id=workspace_id, checkpoint=checkpoint_id).first()
    if row is None:
        return None
    keys = referenced(row.files, row.history)
    blobs = dict(
        CheckpointBlob.objects.filter(workspace_id=workspace_id, key__in=list(keys)).values_list("key", "text")
    )
    files, history = rebuilt(row.files, row.history, blobs)
    return Checkpoint(
        id=row.checkpoint, kind=CheckpointKind(row.kind), files=files, history=history, ledger=row.ledger,
        turn=row.turn, prompt=row.prompt, name=row.name, author=row.author_name, author_id=row.author_id, at=row.at,
    )


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """One line of the history panel's checkpoint list."""

    id: str
    kind: str
    at: datetime
    author: str
    prompt: str
    name: str
    files: int


def checkpoint_list(workspace_id: uuid.UUID, limit: int = PANEL_SHOWN) -> list[CheckpointEntry]:
    """The workspace's newest checkpoints, newest first."""
    rows = CheckpointRow.objects.filter(workspace_id=workspace_id).order_by("-pk")[:limit]
    return [
        CheckpointEntry(
            id=row.checkpoint, kind=row.kind, at=datetime.fromtimestamp(row.at / 1000, tz=UTC),
            author=row.author_name, prompt=row.prompt, name=row.name, files=len(row.files),
        )
        for row in rows
    ]


@dataclass(frozen=True, slots=True)
class CheckpointStorage:
    """What a workspace's checkpoints take: how many, their blobs and the blobs' characters."""

    checkpoints: int
    blobs: int
    blob_chars: int


def checkpoint_storage(workspace_id: uuid.UUID) -> CheckpointStorage:
    blobs = CheckpointBlob.objects.filter(workspace_id=workspace_id)
    chars = blobs.aggregate(total=Sum(Length("text")))["total"] or 0
    return CheckpointStorage(
        checkpoints=CheckpointRow.objects.filter(workspace_id=workspace_id).count(), blobs=blobs.count(),
        blob_chars=int(chars),
    )
