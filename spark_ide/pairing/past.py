"""The turn records a reopened room rebuilds its model's conversation from (``live.reopen``)."""

from __future__ import annotations

import uuid

from spark_ide.live.events import CheckpointRestored, TurnStarted, TurnStatus
from spark_ide.live.reopen import PastRecord, StoredPast

from .models import RoomEvent, Turn

_FIELDS = ("id", "prompt", "status", "output", "ledger", "steered_from_id", "created_at")


def _record(row: Turn) -> PastRecord:
    return PastRecord(
        turn=row.id, prompt=row.prompt, status=row.status, output=row.output,
        ledger=row.ledger if isinstance(row.ledger, list) else [], steered_from=row.steered_from_id,
    )


def stored_past(workspace_id: uuid.UUID, *, turns: int) -> StoredPast:
    """``live.reopen.StoredPast`` of the workspace: a few queries (one more per step of the
    longest steering chain among the newest turns)."""
    events = RoomEvent.objects.filter(workspace_id=workspace_id)
    restore = (
        events.filter(kind=CheckpointRestored.type, data__conversation=True)
        .order_by("-seq").values_list("seq", "data").first()
    )
    ended = Turn.objects.filter(session__workspace_id=workspace_id).exclude(status=TurnStatus.RUNNING).only(*_FIELDS)
    restored = None
    if restore is not None:
        seq, data = restore
        restored = str(data.get("checkpoint", "")) or None
        ended = ended.filter(id__in=events.filter(kind=TurnStarted.type, seq__gt=seq).values("turn"))
    last = ended.order_by("-created_at").first()
    newest = list(ended.exclude(status=TurnStatus.STEERED).order_by("-created_at")[:turns]) if turns > 0 else []
    known = {row.id: row for row in newest}
    wanted = {row.steered_from_id for row in newest if row.steered_from_id} - known.keys()
    while wanted:  # the turns their steering chains started from
        found = list(Turn.objects.filter(id__in=wanted).only(*_FIELDS))
        known.update((row.id, row) for row in found)
        wanted = {row.steered_from_id for row in found if row.steered_from_id} - known.keys()
    rows = sorted(known.values(), key=lambda row: row.created_at)
    return StoredPast(
        turns=tuple(_record(row) for row in rows), last=_record(last) if last is not None else None,
        restored=restored,
    )
