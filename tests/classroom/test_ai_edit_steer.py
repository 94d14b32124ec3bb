"""A course's ``ai_edit_steer`` (issue 33): whether a student's edit of the lines the model is
writing steers it. The teacher sets it on the course page; a bad value is refused, nothing
saved; the room reads it through ``ai_policy_for`` and the student's policy line says it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from spark_ide.classroom.copies import ai_policy_for
from spark_ide.classroom.models import Course
from spark_ide.classroom.services import ClassroomError, policy_set
from spark_ide.live.policy import AiPolicy, BadPolicy

from .conftest import enrol, signed_in

pytestmark = pytest.mark.django_db

RULES = {"ai_mode": "on", "max_effort": "", "token_quota": "", "guard_mode": "halt", "ai_runs": "allowed"}


def test_the_teacher_turns_steering_by_editing_off_and_the_room_reads_it(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    assert AiPolicy.from_mapping(ai_policy_for(kim.workspace_id)).edit_steer  # on by default
    browser = signed_in(teacher)
    page = browser.get(f"/classroom/{course.pk}/").content.decode()
    assert '<option value="on" selected>on</option>' in page.split('name="ai_edit_steer"')[1].split("</select>")[0]
    assert browser.post(f"/classroom/{course.pk}/policy", {**RULES, "ai_edit_steer": "off"}).status_code == 302
    course.refresh_from_db()
    assert course.ai_edit_steer is False
    policy = AiPolicy.from_mapping(ai_policy_for(kim.workspace_id))
    assert not policy.edit_steer
    assert policy.label() == "AI: on · no steering by editing"
    assert browser.post(f"/classroom/{course.pk}/policy", RULES).status_code == 302  # not in the form: kept
    course.refresh_from_db()
    assert course.ai_edit_steer is False


def test_a_bad_value_is_refused_whole(course: Course, teacher: User) -> None:
    refused = signed_in(teacher).post(
        f"/classroom/{course.pk}/policy", {**RULES, "ai_mode": "explain", "ai_edit_steer": "sometimes"},
    )
    assert refused.status_code == 400 and 'data-code="bad_ai_edit_steer"' in refused.content.decode()
    course.refresh_from_db()
    assert (course.ai_mode, course.ai_edit_steer) == ("on", True)
    with pytest.raises(ClassroomError, match="on or off"):
        policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_edit_steer="yes")
    with pytest.raises(BadPolicy, match="ai_edit_steer must be true or false"):
        AiPolicy.from_mapping({"mode": "on", "ai_edit_steer": "no"})
