"""A course fixes the models its students may use (issue 34): the teacher ticks them on the
course page; a student's copy runs on its pick among them (else the first), its picker offers
only them, and a pick outside them is refused (``model_not_allowed``); an unknown name in the
form is refused, nothing saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.classroom.models import Course
from spark_ide.classroom.services import ClassroomError, policy_set, student_session
from spark_ide.workspaces.catalogue import entry_for
from tests.support.catalogue import entry, use_catalogue

from .conftest import enrol, signed_in

pytestmark = pytest.mark.django_db

RULES = {"ai_mode": "on", "max_effort": "", "token_quota": "", "guard_mode": "halt", "ai_runs": "allowed"}


@pytest.fixture(autouse=True)
def three_models(settings: Any, tmp_path: Path) -> None:
    use_catalogue(settings, tmp_path, entry("fast") + entry("strong") + entry("cheap"))


def test_the_teacher_ticks_the_models_students_may_use(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    page = browser.get(f"/classroom/{course.pk}/").content.decode()
    boxes = page.split("Models students may use")[1].split("</fieldset>")[0]
    assert all(f'name="ai_models" value="{name}">' in boxes for name in ("fast", "strong", "cheap"))  # none ticked
    saved = browser.post(f"/classroom/{course.pk}/policy", {**RULES, "ai_models_shown": "1",
                                                            "ai_models": ["cheap", "fast"]})
    assert saved.status_code == 302
    course.refresh_from_db()
    assert course.ai_models == ["fast", "cheap"]  # in the catalogue's order
    shown = browser.get(f"/classroom/{course.pk}/").content.decode()
    assert 'value="fast" checked>' in shown and 'value="strong">' in shown
    browser.post(f"/classroom/{course.pk}/policy", RULES)  # a form without the boxes keeps them
    course.refresh_from_db()
    assert course.ai_models == ["fast", "cheap"]
    browser.post(f"/classroom/{course.pk}/policy", {**RULES, "ai_models_shown": "1"})  # none ticked: any
    course.refresh_from_db()
    assert course.ai_models == []


def test_an_unknown_model_in_the_form_is_refused_and_nothing_is_saved(course: Course, teacher: User) -> None:
    refused = signed_in(teacher).post(
        f"/classroom/{course.pk}/policy", {**RULES, "ai_mode": "explain", "ai_models_shown": "1", "ai_models": ["gpt"]},
    )
    html = refused.content.decode()
    assert refused.status_code == 400 and 'data-code="unknown_model"' in html
    assert "No model &#x27;gpt&#x27; here: the models are fast, strong, cheap." in html
    course.refresh_from_db()
    assert (course.ai_models, course.ai_mode) == ([], "on")
    with pytest.raises(ClassroomError, match="No model 'x' here"):
        policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_models=["x"])


def test_a_students_copy_runs_on_and_picks_among_the_courses_models(course: Course) -> None:
    kim = enrol(course, "kim")
    assert entry_for(kim.workspace_id).name == "fast"  # any model: the catalogue's default
    policy_set(course=course, ai_mode="on", max_effort="", token_quota=None, ai_models=["strong", "cheap"])
    assert entry_for(kim.workspace_id).name == "strong"  # the default is not allowed: the course's first
    api = Client()
    api.force_login(kim.student)
    url = f"/api/workspaces/{kim.workspace_id}"
    refused = api.patch(url, {"model": "fast"}, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "code": "model_not_allowed", "message": "this course allows only strong, cheap, not 'fast'",
    }
    assert api.patch(url, {"model": "cheap"}, content_type="application/json").json()["model"] == "cheap"
    assert entry_for(kim.workspace_id).name == "cheap"
    page = api.get(f"/sessions/{student_session(kim).id}/").content.decode()
    picker = page.split('id="model-picker"')[1].split("</div>")[0]
    assert 'value="cheap" selected' in picker and 'value="strong"' in picker and 'value="fast"' not in picker
