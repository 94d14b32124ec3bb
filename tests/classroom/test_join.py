"""Students join a course by its code: as a guest with a display name, or with their account;
each gets one copy of the template with a session they own."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.accounts.models import Guest
from spark_ide.classroom.models import Course, Enrollment
from spark_ide.classroom.services import course_archive
from spark_ide.pairing.models import Role
from spark_ide.pairing.services import role_for, session_get, socket_place

from .conftest import TEMPLATE, enrol, signed_in

pytestmark = pytest.mark.django_db


def session_id_of(response: Any) -> str:
    assert response.status_code == 302, response.content.decode()
    location = str(response["Location"])
    assert location.startswith("/sessions/")
    return location.removeprefix("/sessions/").strip("/")


def test_a_guest_joins_with_a_display_name_and_gets_an_own_copy(course: Course) -> None:
    browser = Client()
    page = browser.get(f"/join/{course.code}")
    assert page.status_code == 200 and "Python 101" in page.content.decode()
    assert not Enrollment.objects.exists()  # opening the page makes nobody
    session_id = session_id_of(browser.post(f"/join/{course.code}", {"name": "  Grace   Hopper "}))
    enrollment = Enrollment.objects.select_related("student", "workspace").get()
    assert enrollment.display_name == "Grace Hopper"
    assert Guest.objects.filter(user=enrollment.student, name="Grace Hopper").exists()
    assert enrollment.workspace.owner == enrollment.student
    assert enrollment.workspace.pk != course.template.pk
    assert dict(enrollment.workspace.files.values_list("path", "text")) == TEMPLATE
    session = session_get(session_id)
    assert session.workspace_id == enrollment.workspace_id
    assert role_for(session=session, user=enrollment.student) == Role.OWNER
    # The guest is signed in: their session page opens, with the course's notice.
    html = browser.get(f"/sessions/{session_id}/").content.decode()
    assert "Your teacher can see your prompts" in html
    # Signing in again lands on their own copy (a guest has no workspace list).
    assert browser.get("/sessions/")["Location"] == f"/sessions/{session_id}/"


def test_a_guest_without_a_name_is_asked_again(course: Course) -> None:
    response = Client().post(f"/join/{course.code}", {"name": "   "})
    assert response.status_code == 400
    assert 'data-code="name_required"' in response.content.decode()
    assert not Enrollment.objects.exists() and not User.objects.filter(guest__isnull=False).exists()


def test_a_signed_in_student_joins_with_their_account_and_rejoining_returns_the_same_copy(
    course: Course, user: Any
) -> None:
    browser = signed_in(user)
    confirm = browser.get(f"/join/{course.code}")  # opening the link asks; it enrols nobody
    assert confirm.status_code == 200 and "You join as <strong>ada</strong>" in confirm.content.decode()
    assert not Enrollment.objects.exists()
    first = session_id_of(browser.post(f"/join/{course.code}", {"name": "ada"}))
    again = session_id_of(browser.post(f"/join/{course.code.lower()}"))
    assert first == again == session_id_of(browser.get(f"/join/{course.code}"))  # enrolled: straight to the copy
    enrollment = Enrollment.objects.get()
    assert enrollment.student == user and enrollment.display_name == "ada"
    assert not Guest.objects.exists()


def test_the_code_form_leads_to_the_course(course: Course) -> None:
    assert Client().get("/join/").status_code == 200
    response = Client().get("/join/", {"code": f" {course.code[:5]}-{course.code[5:].lower()} "})
    assert response.status_code == 302 and response["Location"] == f"/join/{course.code}"


def test_a_bad_code_is_not_found(course: Course) -> None:
    response = Client().get("/join/NOSUCHCODE")
    assert response.status_code == 404
    assert "No course has this code" in response.content.decode()


def test_an_archived_course_refuses_new_students_but_keeps_those_enrolled(course: Course, user: Any) -> None:
    enrolled = enrol(course, "kim")
    course_archive(course=course)
    refused = Client().post(f"/join/{course.code}", {"name": "Late"})
    assert refused.status_code == 403 and "archived" in refused.content.decode()
    assert signed_in(user).get(f"/join/{course.code}").status_code == 403
    assert Enrollment.objects.count() == 1
    # Someone already enrolled still reaches their copy, read-only: a viewer there, on a
    # session socket as on its page.
    session_id = session_id_of(signed_in(enrolled.student).get(f"/join/{course.code}"))
    assert role_for(session=session_get(session_id), user=enrolled.student) == Role.VIEWER
    place, role = socket_place(session_id, enrolled.student)
    assert place is not None and place.workspace_id == enrolled.workspace_id and role == Role.VIEWER


def test_the_teacher_cannot_enrol_in_their_own_course(course: Course, teacher: User) -> None:
    response = signed_in(teacher).get(f"/join/{course.code}")
    assert response.status_code == 403 and "your course" in response.content.decode()


def test_a_guest_who_chooses_a_password_signs_in_elsewhere_and_reaches_the_same_copy(course: Course) -> None:
    weak = Client().post(f"/join/{course.code}", {"name": "Ada", "password": "123"})
    assert weak.status_code == 400 and 'data-code="weak_password"' in weak.content.decode()
    assert not User.objects.filter(guest__isnull=False).exists()  # nothing half made
    first = session_id_of(Client().post(f"/join/{course.code}", {"name": "Ada", "password": "a long pass phrase"}))
    other_machine = Client()
    signed = other_machine.post("/login/", {"username": "Ada (guest)", "password": "a long pass phrase"})
    assert signed.status_code == 302
    assert session_id_of(other_machine.get(f"/join/{course.code}")) == first
    assert Enrollment.objects.count() == 1



def test_a_student_at_the_workspace_cap_is_told_why_the_copy_was_not_made(
    course: Course, settings: Any, django_user_model: Any
) -> None:
    settings.SPARK_MAX_WORKSPACES_PER_USER = 0
    student = django_user_model.objects.create_user(username="full")
    answer = signed_in(student).post(f"/join/{course.code}")
    assert answer.status_code == 403 and "could not be made" in answer.content.decode()
    assert not Enrollment.objects.filter(student=student).exists()
