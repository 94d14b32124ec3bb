"""The teacher's dashboard: each student's live status. Apart from ``services`` because it
asks this process's rooms (``pairing.adapter``), which ask ``services`` for the AI rules."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from spark_ide.live.cluster import Replica
from spark_ide.live.room import Room
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Run, Turn, TurnStatus

from .models import Course, Enrollment
from .services import student_session


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
    session_id: uuid.UUID
    editing: bool
    turn_running: bool
    last_run: Run | None


def dashboard(course: Course) -> list[StudentStatus]:
    """Each student with what they are doing now: connected to their room (editing), a model
    turn running, their latest run."""
    rows = []
    for enrollment in course.enrollments.select_related("workspace", "student"):
        workspace_id = enrollment.workspace_id
        present = connected_users(workspace_id) or set()
        running = Turn.objects.filter(session__workspace_id=workspace_id, status=TurnStatus.RUNNING).exists()
        last_run = Run.objects.filter(session__workspace_id=workspace_id).order_by("-created_at", "-id").first()
        rows.append(StudentStatus(
            enrollment=enrollment, session_id=student_session(enrollment).id,
            editing=enrollment.student_id in present, turn_running=running, last_run=last_run,
        ))
    return rows
