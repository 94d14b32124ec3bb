"""What a student and their teacher find: the header's Classroom link, the classroom's home for
a student, the student's own page (their role, and panels that answer: People, Invite, the
watchdog, export; no public page), the teacher's on Watch, and the dashboard's AI-turn column."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from spark_ide.classroom.models import Course, Enrollment
from spark_ide.classroom.services import course_archive, course_create, course_join, student_session, teacher_grant
from spark_ide.pairing.models import Participant, Turn, TurnStatus
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import file_write

from .conftest import enrol, signed_in

pytestmark = pytest.mark.django_db

CLASSROOM_LINK = 'id="classroom-link"'


def guest_student(course: Course, name: str = "Kim") -> tuple[Client, Enrollment]:
    """A student who joined by the course's link, without an account (a guest)."""
    browser = Client()
    response = browser.post(f"/join/{course.code}", {"name": name})
    assert response.status_code == 302
    return browser, Enrollment.objects.select_related("workspace", "student").get(display_name=name)


def badge(html: str) -> str:
    found = re.search(r'<span class="role-badge role-([a-z]+)" title="([^"]*)">([a-z]+)</span>', html)
    assert found, "no role badge"
    return found[3]


def test_the_header_links_the_classroom_for_teachers_and_students_only(
    course: Course, teacher: User, user: Any
) -> None:
    assert CLASSROOM_LINK in signed_in(teacher).get("/").content.decode()
    assert CLASSROOM_LINK not in signed_in(user).get("/").content.decode()  # neither: no link
    kim, enrollment = guest_student(course)
    page = kim.get(f"/sessions/{student_session(enrollment).id}/").content.decode()
    assert CLASSROOM_LINK in page and 'href="/classroom/"' in page


def test_the_classroom_home_lists_a_students_courses_with_a_way_to_their_copy(course: Course) -> None:
    kim, enrollment = guest_student(course)
    home = kim.get("/classroom/")
    assert home.status_code == 200
    html = home.content.decode()
    assert 'data-course="Python 101"' in html and f'href="/join/{course.code}"' in html
    assert "New course" not in html  # a student makes none
    opened = kim.get(f"/join/{course.code}")  # the course's link takes them to their copy
    assert opened.status_code == 302 and opened["Location"] == f"/sessions/{student_session(enrollment).id}/"
    course_archive(course=course)
    assert "archived: read-only" in kim.get("/classroom/").content.decode()


def test_a_teacher_who_also_takes_a_course_sees_both(course: Course, teacher: User, django_user_model: Any) -> None:
    other = django_user_model.objects.create_user(username="other-teacher")
    teacher_grant(other)
    other = User.objects.get(pk=other.pk)  # permissions are cached on the instance
    theirs = course_create(teacher=other, name="Rust 1", template=Workspace.objects.create(owner=other, name="rs"))
    course_join(course=theirs, user=teacher)
    html = signed_in(teacher).get("/classroom/").content.decode()
    assert 'data-course="Rust 1"' in html and "Python 101" in html and "New course" in html


def test_a_guest_students_page_says_student_and_every_panel_answers(course: Course, teacher: User) -> None:
    kim, enrollment = guest_student(course)
    session = student_session(enrollment)
    signed_in(teacher).post(f"/classroom/{course.pk}/students/{enrollment.pk}/watch")  # the teacher watches
    page = kim.get(f"/sessions/{session.id}/")
    html = page.content.decode()
    assert badge(html) == "student"
    assert 'id="members"' in html and "Invite" in html and 'id="guard-setting"' in html
    assert "public-share" not in html  # a course's copy has no public page
    # What the panels load, as the page asks for them: all answer.
    members = kim.get(f"/sessions/{session.id}/members")
    assert members.status_code == 200
    rows = [(m.name, m.role, m.teacher, m.removable) for m in members.context["members"]]
    assert rows == [("Kim", "owner", False, False), ("teach", "viewer", True, False)]
    listing = members.content.decode()
    assert "role-teacher" in listing and "role-student" in listing and ">Remove</button>" not in listing
    guard = kim.get(f"/w/{enrollment.workspace_id}/guard")
    assert guard.status_code == 200 and "set by the course" in guard.content.decode()
    assert kim.get(f"/w/{enrollment.workspace_id}/export.zip").status_code == 200
    assert kim.post(f"/sessions/{session.id}/invites", {"role": "viewer"}).status_code == 200
    # The teacher stays: removing them is refused, said in the panel.
    refused = kim.post(f"/sessions/{session.id}/members", {"remove": str(teacher.pk)})
    assert refused.status_code == 200 and 'data-code="not_removable"' in refused.content.decode()
    assert Participant.objects.filter(session=session, user=teacher).exists()
    # No public page for the copy, even asked for directly.
    refused = kim.post(f"/w/{enrollment.workspace_id}/public", {"public": "on"})
    assert refused.status_code == 403  # a guest cannot reach the switch at all
    student = enrol(course, "lee")
    lee = signed_in(student.student)
    public = lee.post(f"/w/{student.workspace_id}/public", {"public": "on"})
    assert public.status_code == 409 and not Workspace.objects.get(pk=student.workspace_id).public


def test_the_teacher_watching_is_told_they_are_the_teacher(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    browser = signed_in(teacher)
    browser.post(f"/classroom/{course.pk}/students/{kim.pk}/watch")
    html = browser.get(f"/sessions/{student_session(kim).id}/").content.decode()
    assert badge(html) == "teacher" and "Kim&#x27;s copy of “Python 101”" in html
    assert 'id="members"' not in html and "public-share" not in html  # a viewer's page
    course_archive(course=course)
    html = signed_in(kim.student).get(f"/sessions/{student_session(kim).id}/").content.decode()
    assert badge(html) == "student" and "read-only" in html  # a viewer there now, still a student


def test_the_session_page_names_the_file_changed_last(course: Course) -> None:
    kim = enrol(course, "kim")
    file_write(workspace=kim.workspace, path="main.py", data="print('kim')\n")
    html = signed_in(kim.student).get(f"/sessions/{student_session(kim).id}/").content.decode()
    assert 'data-last-file="main.py"' in html


def test_the_dashboard_shows_the_students_last_ai_turn_as_soon_as_it_ends(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    browser = signed_in(teacher)

    def cell() -> str:
        html = browser.get(f"/classroom/{course.pk}/students").content.decode()
        return html.split('data-student="Kim"')[1].split('data-field="turn">')[1].split("</td>")[0]

    assert cell() == "no turn yet"
    Turn.objects.create(id="t1", session=student_session(kim), prompt="explain loops", status=TurnStatus.RUNNING)
    assert "running · " in cell() and 'title="explain loops"' in cell()
    Turn.objects.filter(pk="t1").update(status=TurnStatus.COMPLETED, finished_at=timezone.now())
    assert "completed · just now" in cell()
