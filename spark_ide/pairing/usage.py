"""What the turns used, summed from their records (issue 34; docs/models.md, "Spend").

Every turn's record holds its tokens and cost (``Turn.input_tokens`` ... ``cost_usd``, written
by ``services.turn_finish`` from ``live.usage``). Summed here: a session's (the live page's
running totals), what a person's turns cost today (the daily budget, ``live.spend``), a
person's use by day and model (the *Usage* page), each student's in a course (the teacher's
course page). A day is a UTC day; the model is the one the turn ran on: the catalogue entry's
name (``Turn.model``), or for a turn recorded before the catalogue its model id (``metrics["model"]``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import CharField, Count, IntegerField, Max, QuerySet, Sum, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, NullIf, TruncDate
from django.utils import timezone

from spark_ide.live.spend import Spent
from spark_ide.live.usage import TurnUsage

from .models import Turn

_SUMS: dict[str, Any] = {
    "input": Coalesce(Sum("input_tokens"), 0),
    "cached": Coalesce(Sum("cached_input_tokens"), 0),
    "output": Coalesce(Sum("output_tokens"), 0),
    "cost": Sum("cost_usd"),  # null when no turn had a known price
    "estimated": Coalesce(Max(Cast("usage_estimated", output_field=IntegerField())), 0),
}


def _usage(row: dict[str, Any]) -> TurnUsage:
    return TurnUsage(
        input_tokens=int(row["input"]), cached_input_tokens=int(row["cached"]), output_tokens=int(row["output"]),
        estimated=bool(row["estimated"]), cost_usd=row["cost"],
    )


def turn_usage(turn: Turn) -> TurnUsage:
    """One turn's usage, from its record."""
    return TurnUsage(turn.input_tokens, turn.cached_input_tokens, turn.output_tokens, turn.usage_estimated,
                     turn.cost_usd)


def usage_of(turns: QuerySet[Turn]) -> TurnUsage:
    """The sum of ``turns``' usage."""
    return _usage(turns.aggregate(**_SUMS))


def day_start(now: datetime | None = None) -> datetime:
    """The start of the UTC day ``now`` is in."""
    now = now or timezone.now()
    return datetime.combine(now.astimezone(UTC).date(), time.min, tzinfo=UTC)


def spent(session: str, user_id: int | None) -> Spent:
    """For a turn about to start (``RoomStore.spent``): the session's turns so far, and what
    the turns ``user_id`` asked for cost today; the daily budget starts again at the next UTC midnight."""
    start = day_start()
    today = Decimal(0)
    if user_id is not None:
        cost = Turn.objects.filter(author_id=user_id, created_at__gte=start).aggregate(cost=Sum("cost_usd"))["cost"]
        today = cost or Decimal(0)
    return Spent(
        session=usage_of(Turn.objects.filter(session_id=uuid.UUID(session))),
        today_usd=today, resets_at=start + timedelta(days=1),
    )


@dataclass(frozen=True)
class UsageRow:
    """One line of the Usage page: a day and a model, its turns and what they used."""

    day: date
    model: str
    turns: int
    usage: TurnUsage


def by_day_and_model(user_id: int, *, days: int = 31) -> list[UsageRow]:
    """A person's turns (those they asked for) of the last ``days`` days, by UTC day and model,
    newest day first."""
    since = day_start() - timedelta(days=days - 1)
    rows = (
        Turn.objects.filter(author_id=user_id, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC), model_name=_MODEL_NAME)
        .values("day", "model_name")
        .annotate(turns=Count("id"), **_SUMS)
        .order_by("-day", "model_name")
    )
    return [UsageRow(row["day"], row["model_name"] or "", row["turns"], _usage(row)) for row in rows]


# The model a turn ran on: its catalogue entry's name, else (recorded before the catalogue) its model id.
_MODEL_NAME = Coalesce(NullIf("model", Value("")), KeyTextTransform("model", "metrics"), output_field=CharField())


def total(rows: Iterable[UsageRow]) -> tuple[int, TurnUsage]:
    """The turns and the usage of ``rows`` together (the Usage page's last line)."""
    turns, usage = 0, TurnUsage()
    for row in rows:
        turns, usage = turns + row.turns, usage.plus(row.usage)
    return turns, usage


def by_workspace(workspace_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[int, TurnUsage]]:
    """Each workspace's turns and their usage (a course's copies: each student's use)."""
    rows = (
        Turn.objects.filter(session__workspace_id__in=list(workspace_ids))
        .values("session__workspace_id")
        .annotate(turns=Count("id"), **_SUMS)
        .order_by()
    )
    return {row["session__workspace_id"]: (row["turns"], _usage(row)) for row in rows}
