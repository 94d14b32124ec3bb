"""A course's ``ai_runs`` (issue 30): whether the model may run code in its students' copies.
The teacher sets it on the course page; a bad value is refused, nothing saved; the student's
page and the live policy line say it; the room reads it through ``ai_policy_for``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from spark_ide.classroom.copies import ai_policy_for, course_notice_for
from spark_ide.classroom.models import Course
from spark_ide.classroom.services import ClassroomError, policy_set, student_session
from spark_ide.live.policy import AiPolicy, AiRuns

from .conftest import enrol, signed_in

pytestmark = pytest.mark.django_db

RULES = {"ai_mode": "on", "max_effort": "", "token_quota": "", "guard_mode": "halt"}


def test_the_teacher_chooses_what_the_ai_may_run_on_the_course_page(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    page = browser.get(f"/classroom/{course.pk}/").content.decode()
    form = page.split('name="ai_runs"')[1].split("</select>")[0]
    assert '<option value="allowed" selected>code and tests</option>' in form
    assert '<option value="tests">tests only</option>' in form and '<option value="never">never</option>' in form
    assert "The AI may run" in page
    saved = browser.post(f"/classroom/{course.pk}/policy", {**RULES, "ai_runs": "tests"})
    assert saved.status_code == 302
    course.refresh_from_db()
    assert course.ai_runs == "tests"
    shown = browser.get(f"/classroom/{course.pk}/").content.decode()
    assert '<option value="tests" selected>tests only</option>' in shown


def test_an_unknown_choice_is_refused_and_nothing_is_saved(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    browser.post(f"/classroom/{course.pk}/policy", {**RULES, "ai_runs": "never"})
    for bad in ("sometimes", "", "NEVER"):
        refused = browser.post(
            f"/classroom/{course.pk}/policy", {**RULES, "ai_mode": "explain", "token_quota": "10", "ai_runs": bad},
        )
        html = refused.content.decode()
        assert refused.status_code == 400 and 'data-code="bad_ai_runs"' in html
        assert "What the AI may run is one of allowed (code and tests), tests (tests only), never (never)." in html
    course.refresh_from_db()
    assert (course.ai_runs, course.ai_mode, course.token_quota) == ("never", "on", None)  # the whole form refused
    with pytest.raises(ClassroomError, match="What the AI may run"):
        policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_runs="maybe")


def test_a_form_without_the_field_keeps_the_courses_choice(course: Course, teacher: User) -> None:
    policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_runs="tests")
    assert signed_in(teacher).post(f"/classroom/{course.pk}/policy", RULES).status_code == 302
    course.refresh_from_db()
    assert course.ai_runs == "tests"


def test_the_room_reads_the_rule_and_the_student_is_told_it(course: Course) -> None:
    kim = enrol(course, "kim")
    assert ai_policy_for(kim.workspace_id)["ai_runs"] == "allowed"  # type: ignore[index]
    assert "runs:" not in (course_notice_for(kim.workspace_id) or "")  # the default goes unsaid
    policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_runs="tests")
    policy = AiPolicy.from_mapping(ai_policy_for(kim.workspace_id))
    assert policy.runs is AiRuns.TESTS and policy.tests_only and policy.model_runs
    assert course_notice_for(kim.workspace_id) == "Your teacher can see your prompts. AI: on, runs: tests only."
    assert policy.label() == "AI: on · runs: tests only"  # the live policy line beside the prompt box
    policy_set(course=course, ai_mode="on", max_effort="low", token_quota=1000, ai_runs="never")
    policy = AiPolicy.from_mapping(ai_policy_for(kim.workspace_id))
    assert policy.runs is AiRuns.NEVER and not policy.model_runs
    assert policy.label() == "AI: on · effort up to low · runs: never · 1,000 tokens left"


def test_the_students_session_page_shows_the_rule(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_runs="never")
    page = signed_in(kim.student).get(f"/sessions/{student_session(kim).id}/").content.decode()
    notice = page.split('id="course-notice"')[1].split("</p>")[0]
    assert "AI: on, runs: never." in notice
    # Nothing runs on the model's behalf: the test-rounds switch says why it cannot be turned on.
    switch = page.split('id="auto-test"')[1].split("</div>")[0]
    assert "your course does not let the AI run code" in switch
    assert 'name="auto_test" checked disabled' in switch
