"""The teacher's dashboard: each student's live status, from the database alone.

*Editing* is "the student's copy changed in the last ``EDITING_WINDOW``", read from the time
of its newest file row change (``File.updated_at``). The room's owner keeps the file rows in
line with the live document at most ``LiveSettings.materialize_after_s`` (0.2 s) after each
change, whichever process owns the room, so every process answers the same; who is connected
is only known to the room's owner, and asking it from the process serving the teacher's
request would be a round trip per student every poll. See docs/classroom.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import OuterRef, Subquery
from django.utils import timezone

from spark_ide.live.usage import TurnUsage
from spark_ide.pairing.models import Run, Turn, TurnStatus
from spark_ide.pairing.usage import by_workspace
from spark_ide.workspaces.models import File

from .models import Course, Enrollment

# A copy changed this recently is being edited: long enough to cover reading a line and typing
# the next, short enough that a student who left shows idle within the minute.
EDITING_WINDOW = timedelta(seconds=60)


@dataclass(frozen=True)
class StudentStatus:
    enrollment: Enrollment
    last_edit: datetime | None  # the copy's newest change since the student joined; None: none yet
    editing: bool  # last_edit within EDITING_WINDOW
    last_turn: Turn | None  # the copy's newest AI turn (running, or how it ended)
    last_run: Run | None
    turns: int = 0  # the copy's AI turns so far, and what they used (tokens, cost)
    usage: TurnUsage = field(default_factory=TurnUsage)

    @property
    def turn_running(self) -> bool:
        return self.last_turn is not None and self.last_turn.status == TurnStatus.RUNNING


def dashboard(course: Course) -> list[StudentStatus]:
    """Each student with what they are doing now: editing (a change to their copy within
    ``EDITING_WINDOW``), their latest AI turn (running, or how and when it ended: the row
    says so as soon as the turn's record is written), their latest run, and their AI use so
    far (tokens and cost). Four queries whatever the class size (it is polled)."""
    latest_run = Run.objects.filter(session__workspace_id=OuterRef("workspace_id")).order_by("-created_at", "-id")
    latest_turn = Turn.objects.filter(session__workspace_id=OuterRef("workspace_id")).order_by("-created_at", "-id")
    newest_file = File.objects.filter(workspace_id=OuterRef("workspace_id")).order_by("-updated_at")
    enrollments = list(
        course.enrollments.select_related("student").annotate(
            last_run_id=Subquery(latest_run.values("id")[:1]),
            last_turn_id=Subquery(latest_turn.values("id")[:1]),
            last_change=Subquery(newest_file.values("updated_at")[:1]),
        )
    )
    turn_ids = [getattr(enrollment, "last_turn_id", None) for enrollment in enrollments]
    # Not the turns' texts: the output and the ledger can be long, the row shows a line.
    turns = Turn.objects.only("id", "prompt", "status", "reason", "created_at", "finished_at").in_bulk(
        [turn_id for turn_id in turn_ids if turn_id is not None]
    )
    wanted = [getattr(enrollment, "last_run_id", None) for enrollment in enrollments]
    runs = Run.objects.in_bulk([run_id for run_id in wanted if run_id is not None])
    used = by_workspace(enrollment.workspace_id for enrollment in enrollments)
    now = timezone.now()
    rows = []
    for enrollment, run_id, turn_id in zip(enrollments, wanted, turn_ids, strict=True):
        changed: datetime | None = getattr(enrollment, "last_change", None)
        # The copy's files were written as it was made, just before the enrollment: not an edit.
        last_edit = changed if changed is not None and changed > enrollment.joined_at else None
        rows.append(StudentStatus(
            enrollment=enrollment, last_edit=last_edit,
            editing=last_edit is not None and now - last_edit <= EDITING_WINDOW,
            last_turn=turns.get(turn_id) if turn_id else None, last_run=runs.get(run_id) if run_id else None,
            turns=used.get(enrollment.workspace_id, (0, TurnUsage()))[0],
            usage=used.get(enrollment.workspace_id, (0, TurnUsage()))[1],
        ))
    return rows
