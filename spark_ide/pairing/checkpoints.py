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
    file_keys,
    plan_save,
    rebuilt,
)

from .models import Checkpoint as CheckpointRow
from .models import CheckpointBlob

PANEL_SHOWN = 30  # checkpoints the history panel lists, the newest


def checkpoint_save(workspace_id: uuid.UUID, checkpoint: Checkpoint, *, keep: int) -> Saved:
    """Store ``checkpoint`` in the caller's transaction (``live.checkpoints.plan_save``): only
    the blobs the workspace does not hold yet are written; then the oldest beyond ``keep`` go,
    with the blobs no kept checkpoint uses."""
    stored = addressed(checkpoint)
    blobs = CheckpointBlob.objects.filter(workspace_id=workspace_id)
    mine = CheckpointRow.objects.filter(workspace_id=workspace_id)
    newest = mine.order_by("-number").values_list("number", flat=True).first() or 0
    used = dict(blobs.filter(key__in=list(stored.blobs)).values_list("key", "used"))
    plan = plan_save(stored, number=newest + 1, keep=keep, used=used)
    CheckpointBlob.objects.bulk_create(
        [CheckpointBlob(workspace_id=workspace_id, key=key, text=text, used=plan.number)
         for key, text in plan.new.items()],
        ignore_conflicts=True,
    )
    if plan.mark:
        blobs.filter(key__in=plan.mark).update(used=plan.number)
    CheckpointRow.objects.create(
        checkpoint=checkpoint.id, workspace_id=workspace_id, number=plan.number, kind=checkpoint.kind.value,
        turn=checkpoint.turn, prompt=checkpoint.prompt, name=checkpoint.name, author_id=checkpoint.author_id,
        author_name=checkpoint.author, manifest=stored.manifest, files=len(checkpoint.files),
        history=stored.history, ledger=checkpoint.ledger, at=checkpoint.at,
    )
    if plan.drop_through > 0:
        mine.filter(number__lte=plan.drop_through).delete()
        blobs.filter(used__lt=plan.drop_blobs_below).delete()
    return plan.saved


def checkpoint_load(workspace_id: uuid.UUID, checkpoint_id: str) -> Checkpoint | None:
    """The workspace's checkpoint ``checkpoint_id``, whole; None when it has none of that id."""
    row = CheckpointRow.objects.filter(workspace_id=workspace_id, checkpoint=checkpoint_id).first()
    if row is None:
        return None
    blobs = CheckpointBlob.objects.filter(workspace_id=workspace_id)
    keys = file_keys(blobs.filter(key__in=row.manifest).values_list("text", flat=True))
    texts = dict(blobs.filter(key__in=[*keys.values(), *row.history]).values_list("key", "text"))
    files, history = rebuilt(keys, row.history, texts)
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
    rows = CheckpointRow.objects.filter(workspace_id=workspace_id).order_by("-number")[:limit]
    return [
        CheckpointEntry(
            id=row.checkpoint, kind=row.kind, at=datetime.fromtimestamp(row.at / 1000, tz=UTC),
            author=row.author_name, prompt=row.prompt, name=row.name, files=row.files,
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
