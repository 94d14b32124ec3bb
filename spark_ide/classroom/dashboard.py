"""The teacher's dashboard: each student's live status. Apart from ``services`` because it
asks this process's rooms (``pairing.adapter``), which ask ``services`` for the AI rules."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from spark_ide.live.cluster import Replica
from spark_ide.live.room import Room
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Run, Turn, TurnStatus

from .models import Course, Enrollment


def connected_users(workspace_id: uuid.UUID) -> set[int] | None:
    """Who has a socket in the workspace's room as this process sees it; None: no room here."""
    place = ROOMS.held(str(workspace_id))
    if not isinstance(place, Room | Replica):
        return None
    try:
        return {conn.user_id for conn in list(place.members()) if conn.user_id is not None}
    except RuntimeError:  # the room's loop changed its members while we read them
        return set()


@dataclass(frozen=True)
class StudentStatus:
    enrollment: Enrollment
    editing: bool
    turn_running: bool
    last_run: Run | None


def dashboard(course: Course) -> list[StudentStatus]:
    """Each student with what they are doing now: connected to their room (editing), a model
    turn running, their latest run. Three queries whatever the class size (it is polled)."""
    latest_run = Run.objects.filter(session__workspace_id=OuterRef("workspace_id")).order_by("-created_at", "-id")
    enrollments = list(
        course.enrollments.select_related("student").annotate(last_run_id=Subquery(latest_run.values("id")[:1]))
    )
    ids = [enrollment.workspace_id for enrollment in enrollments]
    running = set(
        Turn.objects.filter(session__workspace_id__in=ids, status=TurnStatus.RUNNING)
        .values_list("session__workspace_id", flat=True)
    )
    wanted = [getattr(enrollment, "last_run_id", None) for enrollment in enrollments]
    runs = Run.objects.in_bulk([run_id for run_id in wanted if run_id is not None])
    rows = []
    for enrollment, run_id in zip(enrollments, wanted, strict=True):
        present = connected_users(enrollment.workspace_id) or set()
        rows.append(StudentStatus(
            enrollment=enrollment, editing=enrollment.student_id in present,
            turn_running=enrollment.workspace_id in running, last_run=runs.get(run_id) if run_id else None,
        ))
    return rows
