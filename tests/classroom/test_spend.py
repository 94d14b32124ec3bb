"""A course's spend (issue 34; docs/classroom.md): the money budget per student beside the
token quota, the cost a copy's turns used (what the live policy counts), each student's use on
the teacher's course page, and no student sees another's."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from spark_ide.classroom.copies import ai_policy_for, course_notice_for
from spark_ide.classroom.models import Course
from spark_ide.classroom.services import ClassroomError, policy_set, student_session
from spark_ide.live.policy import AiPolicy
from spark_ide.pairing.models import Turn

from .conftest import enrol, signed_in

pytestmark = pytest.mark.django_db


def used(enrollment: Any, turn: str, *, cost: str | None, inp: int = 1_000, cached: int = 0, out: int = 100) -> None:
    Turn.objects.create(
        id=turn, session=student_session(enrollment), author=enrollment.student, prompt="p",
        metrics={"tokens": out, "model": "gpt-test"}, input_tokens=inp, cached_input_tokens=cached,
        output_tokens=out, cost_usd=None if cost is None else Decimal(cost),
    )


def test_the_budget_is_set_beside_the_quota_and_bad_ones_are_refused_clearly(course: Course) -> None:
    policy_set(course=course, ai_mode="on", max_effort="", token_quota="", budget_usd="$2.50")
    course.refresh_from_db()
    assert course.budget_usd == Decimal("2.5")
    policy_set(course=course, ai_mode="on", max_effort="", token_quota="")  # not given: kept
    course.refresh_from_db()
    assert course.budget_usd == Decimal("2.5")
    for bad in ("lots", "-1", "1e9", "0.00001", "NaN"):
        with pytest.raises(ClassroomError) as refused:
            policy_set(course=course, ai_mode="on", max_effort="", token_quota="", budget_usd=bad)
        assert refused.value.code == "bad_budget"
    policy_set(course=course, ai_mode="on", max_effort="", token_quota="", budget_usd="")
    course.refresh_from_db()
    assert course.budget_usd is None


def test_a_copys_cost_counts_against_the_courses_budget(course: Course) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    used(kim, "k1", cost="0.30")
    used(kim, "k2", cost="0.15")
    used(kim, "k3", cost=None)  # a model without prices costs nothing
    used(lee, "l1", cost="0.70")
    policy_set(course=course, ai_mode="on", max_effort="", token_quota="", budget_usd="0.50")
    rules = ai_policy_for(kim.workspace_id)
    assert rules is not None and (rules["budget_usd"], rules["cost_used"]) == (Decimal("0.5"), Decimal("0.45"))
    policy = AiPolicy.from_mapping(rules)
    assert policy.refusal() is None and policy.label() == "AI: on · $0.0500 left"
    refusal = AiPolicy.from_mapping(ai_policy_for(lee.workspace_id)).refusal()
    assert refusal is not None and refusal[1] == "you have spent $0.7000 of your $0.5000 AI budget for this course"
    assert course_notice_for(kim.workspace_id) == (
        "Your teacher can see your prompts. AI: on, $0.5000 of AI use for the course."
    )


def test_the_course_page_shows_each_students_use_and_no_student_sees_it(course: Course, teacher: User) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    used(kim, "k1", cost="0.0125", inp=3_000, cached=1_000, out=200)
    used(kim, "k2", cost="0.0100", inp=1_000, out=100)
    html = signed_in(teacher).get(f"/classroom/{course.pk}/students").content.decode()
    kim_row = html.split('data-student="Kim"')[1].split("</tr>")[0]
    lee_row = html.split('data-student="Lee"')[1].split("</tr>")[0]
    kim_use = kim_row.split('data-field="usage">')[1]
    assert kim_use.startswith('<span title="4,000 input tokens (1,000 cached), 300 output">2 turns · 4,300 tokens · ')
    assert '<span data-field="cost">$0.0225</span>' in kim_use
    assert 'data-field="usage">none yet' in lee_row
    page = signed_in(teacher).get(f"/classroom/{course.pk}/").content.decode()
    assert 'name="budget_usd"' in page and "$0.0225" in page
    for student in (kim.student, lee.student):  # a student sees no one's use: not the page, not its rows
        browser = signed_in(student)
        assert browser.get(f"/classroom/{course.pk}/").status_code == 403
        assert browser.get(f"/classroom/{course.pk}/students").status_code == 403


def test_the_teacher_sets_the_budget_in_the_course_page(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    form = {"ai_mode": "on", "max_effort": "", "token_quota": "", "budget_usd": "1.25", "guard_mode": "halt",
            "ai_runs": "allowed"}
    assert browser.post(f"/classroom/{course.pk}/policy", form).status_code == 302
    course.refresh_from_db()
    assert course.budget_usd == Decimal("1.25")
    page = browser.get(f"/classroom/{course.pk}/").content.decode()
    assert 'name="budget_usd" inputmode="decimal" value="1.25"' in page
    refused = browser.post(f"/classroom/{course.pk}/policy", {**form, "budget_usd": "a lot"})
    assert refused.status_code == 400 and 'data-code="bad_budget"' in refused.content.decode()
