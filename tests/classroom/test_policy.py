"""What the live core and the session page ask of a workspace: ai_policy_for, course_notice_for."""

from __future__ import annotations

import uuid
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.classroom.copies import Courses, ai_policy_for, course_notice_for
from spark_ide.classroom.models import Course
from spark_ide.classroom.services import policy_set, student_session
from spark_ide.guard.modes import GuardMode
from spark_ide.live.policy import AiMode, AiPolicy
from spark_ide.pairing.adapter import DatabaseRoomStore
from spark_ide.pairing.models import Turn
from spark_ide.workspaces.models import Workspace

from .conftest import enrol

pytestmark = pytest.mark.django_db


def test_a_workspace_outside_any_course_has_no_policy(course: Course, user: object) -> None:
    assert ai_policy_for(course.template_id) is None  # the teacher's template
    assert ai_policy_for(uuid.uuid4()) is None
    assert course_notice_for(course.template_id) is None
    other = Workspace.objects.create(owner=course.teacher, name="x")
    assert ai_policy_for(other.pk) is None


def test_a_students_copy_has_the_courses_policy_and_the_tokens_its_turns_used(course: Course) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    assert ai_policy_for(kim.workspace_id) == {
        "mode": "on", "max_effort": None, "token_quota": None, "tokens_used": 0, "ai_runs": "allowed",
        "budget_usd": None, "cost_used": Decimal(0), "ai_edit_steer": True,
    }
    policy_set(course=course, ai_mode="explain", max_effort="medium", token_quota=20000)
    session = student_session(kim)
    Turn.objects.create(id="1", session=session, prompt="a", metrics={"tokens": 12000})
    Turn.objects.create(id="2", session=session, prompt="b", metrics={"tokens": 3000, "ttft_ms": 5})
    Turn.objects.create(id="3", session=session, prompt="c", metrics={})  # still running / failed early
    Turn.objects.create(id="4", session=student_session(lee), prompt="d", metrics={"tokens": 99})
    assert ai_policy_for(kim.workspace_id) == {
        "mode": "explain", "max_effort": "medium", "token_quota": 20000, "tokens_used": 15000, "ai_runs": "allowed",
        "budget_usd": None, "cost_used": Decimal(0), "ai_edit_steer": True,
    }
    assert ai_policy_for(lee.workspace_id)["tokens_used"] == 99  # type: ignore[index]
    assert course_notice_for(kim.workspace_id) == (
        "Your teacher can see your prompts. AI: explain-only (it answers but does not edit files), "
        "effort up to medium, 20,000 tokens for the course."
    )
    # What is left is the live label's to say (the page's notice is drawn once).
    assert AiPolicy.from_mapping(ai_policy_for(kim.workspace_id)).label() == (
        "AI: explain-only · effort up to medium · 5,000 tokens left"
    )


def test_the_notice_when_the_ai_is_off_or_the_quota_spent(course: Course) -> None:
    kim = enrol(course, "kim")
    policy_set(course=course, ai_mode="on", max_effort="", token_quota=100)
    Turn.objects.create(id="1", session=student_session(kim), prompt="a", metrics={"tokens": 150})
    notice = course_notice_for(kim.workspace_id)
    assert notice == "Your teacher can see your prompts. AI: on, 100 tokens for the course."
    assert AiPolicy.from_mapping(ai_policy_for(kim.workspace_id)).label() == "AI: on · 0 tokens left"
    policy_set(course=course, ai_mode="off", max_effort="low", token_quota=100)
    assert course_notice_for(kim.workspace_id) == "Your teacher can see your prompts. AI: off."
    assert AiPolicy.from_mapping(ai_policy_for(kim.workspace_id)).label() == "AI: off"  # no cap, no count


def test_the_courses_watchdog_mode_wins_over_its_students_copies(course: Course, client: object) -> None:
    from django.test import Client

    from spark_ide.classroom.services import ClassroomError
    from spark_ide.workspaces.services import guard_mode_for

    kim = enrol(course, "kim")
    Workspace.objects.filter(pk=kim.workspace_id).update(guard_mode="off")  # the copy's own setting
    assert guard_mode_for(kim.workspace_id) == "halt"  # the course's default wins
    assert guard_mode_for(course.template_id) == "halt"
    other = Workspace.objects.create(owner=course.teacher, name="x", guard_mode="flag")
    assert guard_mode_for(other.pk) == "flag"
    assert guard_mode_for(uuid.uuid4()) == "halt"  # gone: the safe default
    assert isinstance(client, Client)
    client.force_login(course.teacher)
    url = f"/classroom/{course.pk}/policy"
    answer = client.post(url, {"ai_mode": "on", "max_effort": "", "token_quota": "", "guard_mode": "flag"})
    assert answer.status_code == 302
    assert guard_mode_for(kim.workspace_id) == "flag"
    answer = client.post(url, {"ai_mode": "on", "max_effort": "", "token_quota": "", "guard_mode": "loud"})
    assert answer.status_code == 400 and b"watchdog" in answer.content
    assert guard_mode_for(kim.workspace_id) == "flag"
    with pytest.raises(ClassroomError):
        policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, guard_mode="")


@pytest.mark.django_db(transaction=True)  # the store reads from the database's threads
async def test_a_room_looks_for_the_courses_rules_only_while_its_workspace_is_a_students_copy(
    course: Course, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace becomes a copy with its enrollment, in one transaction, never later: a room
    on any other workspace stops looking the course up once it found none (a streaming room
    read the policy and the watchdog's mode every 2 s); a copy's room reads them every time."""
    kim = await database_sync_to_async(enrol)(course, "kim")
    other = await database_sync_to_async(Workspace.objects.create)(owner_id=course.teacher_id, name="x")
    looked: Counter[tuple[str, uuid.UUID]] = Counter()

    def counting(name: str) -> Any:
        real = getattr(Courses, name)

        def counted(self: Courses, workspace_id: uuid.UUID) -> Any:
            looked[(name, workspace_id)] += 1
            return real(self, workspace_id)
        return counted

    for name in ("ai_policy", "guard_mode"):
        monkeypatch.setattr(Courses, name, counting(name))
    outside, copy = DatabaseRoomStore(other.pk), DatabaseRoomStore(kim.workspace_id)

    assert await outside.guard_mode() == GuardMode.HALT  # not known yet: the course looked for
    for _ in range(3):
        assert await outside.ai_policy() == AiPolicy.OPEN
        assert await outside.guard_mode() == GuardMode.HALT
    assert looked[("ai_policy", other.pk)] == 1 and looked[("guard_mode", other.pk)] == 1
    # Its owner's own choice still counts.
    await database_sync_to_async(Workspace.objects.filter(pk=other.pk).update)(guard_mode="off")
    assert await outside.guard_mode() == GuardMode.OFF

    assert (await copy.ai_policy()).mode is AiMode.ON
    await database_sync_to_async(policy_set)(course=course, ai_mode="explain", max_effort="", token_quota=None)
    await database_sync_to_async(Course.objects.filter(pk=course.pk).update)(guard_mode="flag")
    assert (await copy.ai_policy()).mode is AiMode.EXPLAIN  # a teacher's change is read
    assert await copy.guard_mode() == GuardMode.FLAG
    assert looked[("ai_policy", kim.workspace_id)] == 2 and looked[("guard_mode", kim.workspace_id)] == 1
