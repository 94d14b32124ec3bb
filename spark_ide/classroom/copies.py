"""A student's copy as the rest of the project asks of it: the AI rules its course sets
(``ai_policy_for``) and the line its student sees where they type (``course_notice_for``).
The apps below this one (workspaces, pairing) import nothing of ours: ``Courses`` answers
them, handed over in ``ClassroomConfig.ready``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db.models import Sum

from spark_ide.live.policy import AiPolicy
from spark_ide.pairing.models import Turn
from spark_ide.pairing.ports import CourseCopy

from .models import Course, Enrollment


def copy_enrollment(workspace_id: uuid.UUID) -> Enrollment | None:
    """The enrollment whose copy the workspace is (with its course and student), or None for
    any other workspace (a template included)."""
    return Enrollment.objects.select_related("course", "student").filter(workspace_id=workspace_id).first()


def _tokens_of(metrics: Iterable[Any]) -> int:
    total = 0
    for entry in metrics:
        tokens = entry.get("tokens") if isinstance(entry, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            total += tokens
    return total


def ai_policy_for(workspace_id: uuid.UUID) -> dict[str, Any] | None:
    """The AI rules for a workspace that is a student's copy in a course, else None (a
    template, any other workspace): ``{"mode", "max_effort" (or None), "token_quota" (int or
    None), "tokens_used", "ai_runs", "ai_edit_steer", "budget_usd" (Decimal or None), "cost_used"}``,
    tokens used being the sum of the copy's turns' ``metrics["tokens"]``, the cost used their
    ``cost_usd``."""
    enrollment = Enrollment.objects.select_related("course").filter(workspace_id=workspace_id).first()
    if enrollment is None:
        return None
    turns = Turn.objects.filter(session__workspace_id=workspace_id)
    used = _tokens_of(turns.values_list("metrics", flat=True))
    cost = turns.aggregate(cost=Sum("cost_usd"))["cost"] if enrollment.course.budget_usd is not None else None
    return _rules_of(enrollment.course, used, cost or Decimal(0))


def _rules_of(course: Course, tokens_used: int = 0, cost_used: Decimal = Decimal(0)) -> dict[str, Any]:
    return {
        "mode": course.ai_mode,
        "max_effort": course.max_effort or None,
        "token_quota": course.token_quota,
        "tokens_used": tokens_used,
        "ai_runs": course.ai_runs,
        "budget_usd": course.budget_usd,
        "cost_used": cost_used,
        "ai_edit_steer": course.ai_edit_steer,
    }


def course_notice_for(workspace_id: uuid.UUID) -> str | None:
    """What a student's session says where they type (None outside a course): that the
    teacher reads the prompts, and the course's AI rules; once the course is archived, that
    the copy is read-only (``pairing.services.role_for`` makes everyone a viewer there).

    The tokens *left* are not in it: the page is drawn once, and the live ``policy`` event
    (``live.policy.AiPolicy.label``, beside the prompt box) counts them down after each turn."""
    return course_notice(Enrollment.objects.select_related("course").filter(workspace_id=workspace_id).first())


def course_notice(enrollment: Enrollment | None) -> str | None:
    """``course_notice_for`` of the copy of ``enrollment`` (None: not a copy, no notice)."""
    if enrollment is None:
        return None
    course = enrollment.course
    if course.archived:
        return (f"“{course.name}” is archived: this copy is read-only. You can open and read the "
                "work, not change it, ask the AI or run it.")
    return "Your teacher can see your prompts. " + AiPolicy.from_mapping(_rules_of(course)).rules()


class Courses:
    """What the apps below this one ask of courses, handed to them in ``ClassroomConfig.ready``:
    ``workspaces.ports.Courses`` (a copy read-only once archived, the course's watchdog mode)
    and ``pairing.ports.Classroom`` (the AI rules for the room, a copy as its pages show it)."""

    def archived(self, workspace_id: uuid.UUID) -> bool:
        return Enrollment.objects.filter(workspace_id=workspace_id, course__archived=True).exists()

    def guard_mode(self, workspace_id: uuid.UUID) -> str | None:
        found = Enrollment.objects.filter(workspace_id=workspace_id).values_list("course__guard_mode", flat=True)
        mode = found.first()
        return None if mode is None else str(mode)

    def models(self, workspace_id: uuid.UUID) -> tuple[str, ...]:
        found = Enrollment.objects.filter(workspace_id=workspace_id).values_list("course__ai_models", flat=True).first()
        return tuple(str(name) for name in found or ())

    def ai_policy(self, workspace_id: uuid.UUID) -> dict[str, Any] | None:
        return ai_policy_for(workspace_id)

    def copy_of(self, workspace_id: uuid.UUID) -> CourseCopy | None:
        enrollment = copy_enrollment(workspace_id)
        if enrollment is None:
            return None
        course = enrollment.course
        return CourseCopy(
            course=course.name, archived=course.archived, student_id=enrollment.student_id,
            student_name=enrollment.display_name, teacher_id=course.teacher_id, notice=course_notice(enrollment) or "",
        )
