"""The turn records a reopened room rebuilds its model's conversation from (``live.reopen``)."""

from __future__ import annotations

import uuid

from spark_ide.live.events import CheckpointRestored, TurnStarted, TurnStatus
from spark_ide.live.reopen import PastRecord, StoredPast

from .models import RoomEvent, Turn

_FIELDS = ("id", "prompt", "status", "output", "ledger", "steered_from_id", "reverted", "created_at")


def _record(row: Turn) -> PastRecord:
    return PastRecord(
        turn=row.id, prompt=row.prompt, status=row.status, output=row.output,
        ledger=row.ledger if isinstance(row.ledger, list) else [], steered_from=row.steered_from_id,
        reverted=row.reverted,
    )


def _steered_from(turns: set[str]) -> set[str]:
    """The turns those of ``turns`` that are steers were steered from."""
    found = Turn.objects.filter(id__in=turns, steered_from__isnull=False).values_list("steered_from_id", flat=True)
    return {str(turn) for turn in found}


def stored_past(workspace_id: uuid.UUID, *, turns: int) -> StoredPast:
    """``live.reopen.StoredPast`` of the workspace: five queries (one more per step of the
    longest steering chain among the newest turns)."""
    events = RoomEvent.objects.filter(workspace_id=workspace_id)
    restore = (
        events.filter(kind=CheckpointRestored.type, data__conversation=True)
        .order_by("-seq").values_list("seq", "data").first()
    )
    ended = Turn.objects.filter(session__workspace_id=workspace_id).exclude(status=TurnStatus.RUNNING)
    restored = None
    if restore is not None:
        seq, data = restore
        restored = str(data.get("checkpoint", "")) or None
        ended = ended.filter(id__in=events.filter(kind=TurnStarted.type, seq__gt=seq).values("turn"))
    # Ids first (the sort reads no turn's text), then the few rows whole.
    newest_first = ended.order_by("-created_at").values_list("id", flat=True)
    last = newest_first.first()
    wanted = set(newest_first.exclude(status=TurnStatus.STEERED)[:turns]) if turns > 0 else set()
    step = _steered_from(wanted)
    while step - wanted:  # the turns their steering chains started from
        step -= wanted
        wanted |= step
        step = _steered_from(step)
    rows = {row.id: row for row in Turn.objects.filter(id__in=wanted | ({last} if last else set())).only(*_FIELDS)}
    ordered = sorted((rows[turn] for turn in wanted if turn in rows), key=lambda row: row.created_at)
    return StoredPast(
        turns=tuple(_record(row) for row in ordered), last=_record(rows[last]) if last in rows else None,
        restored=restored,
    )
