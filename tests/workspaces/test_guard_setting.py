"""The watchdog's mode setting (``views.guard_setting``, issue 15): the owner reads and sets it
(a POST with CSRF), anyone else gets 404, only off/flag/halt are taken, and a student's copy in
a course shows the course's mode, read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from spark_ide.classroom.models import Course
from spark_ide.classroom.services import course_create, course_join, teacher_grant
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import guard_mode_for, workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="ada")


@pytest.fixture
def ws(user: Any) -> Workspace:
    return workspace_create(owner=user, name="Shop", files={"app.py": "print('hi')\n"})


def signed_in(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def token(client: Client, workspace: Workspace) -> str:
    """The CSRF token as the live page gives it (its cookie)."""
    client.get(f"/w/{workspace.id}/")
    return str(client.cookies["csrftoken"].value)


def test_the_owner_sees_halt_by_default_and_sets_each_mode(ws: Workspace, user: Any) -> None:
    owner = signed_in(user)
    page = owner.get(f"/w/{ws.id}/").content.decode()
    assert f'hx-get="/w/{ws.id}/guard"' in page  # the live page loads the panel
    panel = owner.get(f"/w/{ws.id}/guard")
    assert panel.status_code == 200
    assert 'data-guard-mode="halt"' in panel.content.decode()
    assert 'value="halt" checked' in panel.content.decode()

    csrf = token(owner, ws)
    for mode in ("flag", "off", "halt"):
        answer = owner.post(f"/w/{ws.id}/guard", {"mode": mode, "csrfmiddlewaretoken": csrf}, HTTP_HX_REQUEST="true")
        assert answer.status_code == 200
        assert f'data-guard-mode="{mode}"' in answer.content.decode()
        assert " open" in answer.content.decode()  # the panel stays open after the change
        assert Workspace.objects.get(pk=ws.id).guard_mode == mode
        assert guard_mode_for(ws.id) == mode
    plain = owner.post(f"/w/{ws.id}/guard", {"mode": "flag", "csrfmiddlewaretoken": csrf})
    assert plain.status_code == 302 and plain["Location"] == f"/w/{ws.id}/"  # a form without htmx


def test_csrf_is_enforced_and_a_bad_mode_is_refused(ws: Workspace, user: Any) -> None:
    owner = signed_in(user)
    assert owner.post(f"/w/{ws.id}/guard", {"mode": "off"}).status_code == 403
    csrf = token(owner, ws)
    for bad in ("", "loud", "HALT"):
        assert owner.post(f"/w/{ws.id}/guard", {"mode": bad, "csrfmiddlewaretoken": csrf}).status_code == 400
    assert owner.put(f"/w/{ws.id}/guard", HTTP_X_CSRFTOKEN=csrf).status_code == 405
    assert Workspace.objects.get(pk=ws.id).guard_mode == "halt"


def test_anyone_else_gets_not_found(ws: Workspace, django_user_model: Any) -> None:
    stranger = django_user_model.objects.create_user(username="bob")
    other = signed_in(stranger)
    mine = workspace_create(owner=stranger, name="theirs")
    csrf = token(other, mine)
    assert other.get(f"/w/{ws.id}/guard").status_code == 404
    assert other.post(f"/w/{ws.id}/guard", {"mode": "off", "csrfmiddlewaretoken": csrf}).status_code == 404
    assert other.get("/w/not-a-uuid/guard").status_code == 404
    anonymous = Client().post(f"/w/{ws.id}/guard", {"mode": "off"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    assert Workspace.objects.get(pk=ws.id).guard_mode == "halt"


def test_a_students_copy_shows_the_courses_mode_read_only(django_user_model: Any) -> None:
    teacher = django_user_model.objects.create_user(username="teach")
    teacher_grant(teacher)
    template = workspace_create(owner=teacher, name="Exercise", files={"main.py": "print(1)\n"})
    course = course_create(teacher=teacher, name="Python 101", template=template)
    Course.objects.filter(pk=course.pk).update(guard_mode="flag")
    student = django_user_model.objects.create_user(username="stu")
    enrollment, _ = course_join(course=course, user=student)
    copy = enrollment.workspace
    client = signed_in(student)
    panel = client.get(f"/w/{copy.id}/guard").content.decode()
    assert 'data-guard-mode="flag"' in panel and "set by the course" in panel
    assert "<form" not in panel and 'name="mode"' not in panel
    answer = client.post(f"/w/{copy.id}/guard", {"mode": "off", "csrfmiddlewaretoken": token(client, copy)})
    assert answer.status_code == 409
    assert guard_mode_for(copy.id) == "flag"
