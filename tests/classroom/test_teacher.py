"""Teachers: who may be one, their course pages, the dashboard, prompts, pushing a file to
every copy, archiving and deleting; and that students cannot reach each other's work."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone

from spark_ide.classroom.dashboard import dashboard
from spark_ide.classroom.models import Course, Enrollment
from spark_ide.classroom.services import course_join_as_guest, is_teacher, student_session
from spark_ide.editing.paths import beside_path
from spark_ide.pairing.models import Participant, Role, Run, Turn, TurnStatus
from spark_ide.pairing.services import session_for_workspace
from spark_ide.workspaces.documents import files_materialize
from spark_ide.workspaces.models import File, Workspace
from spark_ide.workspaces.services import file_delete, file_write

from .conftest import TEMPLATE, enrol, signed_in

pytestmark = pytest.mark.django_db


# -- who is a teacher ----------------------------------------------------------------------


def test_a_user_who_is_not_a_teacher_cannot_create_or_see_courses(course: Course, user: Any) -> None:
    browser = signed_in(user)
    template = Workspace.objects.create(owner=user, name="mine")
    home = browser.get("/classroom/")  # the classroom's home: the courses they take, a code to join one
    assert home.status_code == 200
    assert "You take no course yet" in home.content.decode() and "New course" not in home.content.decode()
    assert browser.post("/classroom/new", {"name": "Sneaky", "template": str(template.pk)}).status_code == 403
    assert browser.get(f"/classroom/{course.pk}/").status_code == 403
    assert Course.objects.count() == 1


def test_another_teachers_course_is_not_found(course: Course, other_user: Any) -> None:
    call_command("spark_teacher", other_user.username, stdout=io.StringIO())
    assert is_teacher(User.objects.get(pk=other_user.pk))
    browser = signed_in(other_user)
    for url in ("/", "students", "prompts", "delete/students"):
        assert browser.get(f"/classroom/{course.pk}/{url if url != '/' else ''}").status_code == 404


def test_teacher_sign_up_is_off_by_default() -> None:
    assert Client().get("/classroom/signup/").status_code == 404
    assert Client().post("/classroom/signup/", {"username": "t"}).status_code == 404


@override_settings(SPARK_TEACHER_SIGNUP=True)
def test_teacher_sign_up_when_on_makes_a_teacher() -> None:
    browser = Client()
    form = {"username": "mrs-t", "password1": "Quite long pass 42!", "password2": "Quite long pass 42!"}
    mismatch = browser.post("/classroom/signup/", {**form, "password2": "other"})
    assert mismatch.status_code == 400 and not User.objects.filter(username="mrs-t").exists()
    response = browser.post("/classroom/signup/", form)
    assert response.status_code == 302 and response["Location"] == "/classroom/"
    assert is_teacher(User.objects.get(username="mrs-t"))
    assert browser.get("/classroom/").status_code == 200


def test_a_teacher_creates_a_course_from_a_workspace_or_a_zip(teacher: User) -> None:
    browser = signed_in(teacher)
    template = Workspace.objects.create(owner=teacher, name="Week 1")
    created = browser.post("/classroom/new", {"name": "Week one", "template": str(template.pk)})
    assert created.status_code == 302
    course = Course.objects.get(name="Week one")
    assert course.template == template and len(course.code) == 10 and course.ai_mode == "on"
    page = browser.get(f"/classroom/{course.pk}/").content.decode()
    assert course.code in page and f"/join/{course.code}" in page and 'hx-trigger="every 3s"' in page

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("lab/task.py", "x = 1\n")
        archive.writestr("lab/logo.png", b"\x89PNG\x00\xff")
    buffer.seek(0)
    buffer.name = "lab.zip"
    browser.post("/classroom/new", {"name": "Lab", "archive": buffer})
    lab = Course.objects.get(name="Lab")
    assert dict(lab.template.files.values_list("path", "text")) == {"task.py": "x = 1\n"}
    assert lab.template.owner == teacher


def test_a_course_needs_a_name_and_a_template_of_ones_own(teacher: User, user: Any) -> None:
    browser = signed_in(teacher)
    foreign = Workspace.objects.create(owner=user, name="not yours")
    response = browser.post("/classroom/new", {"name": "X", "template": str(foreign.pk)})
    assert response.status_code == 400 and 'data-code="bad_template"' in response.content.decode()
    own = Workspace.objects.create(owner=teacher, name="yours")
    response = browser.post("/classroom/new", {"name": "  ", "template": str(own.pk)})
    assert response.status_code == 400 and 'data-code="bad_name"' in response.content.decode()
    bad_zip = io.BytesIO(b"not a zip")
    bad_zip.name = "x.zip"
    response = browser.post("/classroom/new", {"name": "Z", "archive": bad_zip})
    assert response.status_code == 400 and 'data-code="bad_zip"' in response.content.decode()
    assert not Course.objects.exists()


# -- students cannot see each other's work -------------------------------------------------


def test_students_cannot_reach_each_others_workspace_or_session(course: Course) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    lee_session = student_session(lee)
    browser = signed_in(kim.student)
    assert browser.get(f"/w/{lee.workspace_id}/").status_code == 404
    assert browser.get(f"/sessions/{lee_session.id}/").status_code == 404
    assert browser.get(f"/sessions/{lee_session.id}/tree").status_code == 404
    assert browser.get(f"/api/workspaces/{lee.workspace_id}").status_code == 404
    assert browser.get(f"/w/{kim.workspace_id}/").status_code == 200
    # Nor the teacher's pages.
    assert browser.get(f"/classroom/{course.pk}/students").status_code == 403


def test_a_guest_student_cannot_reach_another_students_session(course: Course) -> None:
    lee = enrol(course, "lee")
    guest = Client()
    guest.post(f"/join/{course.code}", {"name": "Grace"})
    response = guest.get(f"/sessions/{student_session(lee).id}/")
    assert response.status_code in (403, 404)
    assert str(lee.workspace_id) not in response.content.decode()
    assert guest.get(f"/w/{lee.workspace_id}/").status_code in (403, 404)


# -- dashboard, watching, prompts --------------------------------------------------------------


def test_the_dashboard_partial_shows_turns_running_and_the_last_run(
    course: Course, teacher: User, django_assert_max_num_queries: Any
) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    kim_session = student_session(kim)
    Turn.objects.create(id="t1", session=kim_session, author=kim.student, prompt="help", status=TurnStatus.RUNNING)
    Run.objects.create(id="r1", session=kim_session, path="main.py", status="ok", exit_code=0)
    Run.objects.create(id="r2", session=kim_session, path="main.py", status="error", exit_code=1)
    Run.objects.filter(pk="r2").update(created_at=timezone.now() + timedelta(seconds=1))
    html = signed_in(teacher).get(f"/classroom/{course.pk}/students").content.decode()
    kim_row = html.split('data-student="Kim"')[1].split("</tr>")[0]
    lee_row = html.split('data-student="Lee"')[1].split("</tr>")[0]
    assert "running · " in kim_row.split('data-field="turn">')[1] and "error (exit 1)" in kim_row
    assert 'data-field="presence">no edit yet' in kim_row
    assert 'data-field="turn">no turn yet' in lee_row and "no run yet" in lee_row
    assert lee.display_name == "Lee"
    enrol(course, "max")
    with django_assert_max_num_queries(4):  # polled every 3 s: not a query per student
        rows = dashboard(course)
    assert [(row.enrollment.display_name, row.turn_running) for row in rows] == [
        ("Kim", True), ("Lee", False), ("Max", False),
    ]
    assert rows[0].last_run is not None and rows[0].last_run.pk == "r2"


def test_editing_is_a_change_the_rooms_owner_persisted_within_the_window(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    assert dashboard(course)[0].last_edit is None  # the copy as made: no edit
    # What the room's owner does, on whichever process holds the room, 0.2 s after Kim types:
    # no room in this process, the dashboard still sees it.
    files_materialize(kim.workspace_id, {**TEMPLATE, "main.py": "print('kim')\n"})
    row = dashboard(course)[0]
    assert row.editing and row.last_edit is not None
    Enrollment.objects.filter(pk=kim.pk).update(joined_at=timezone.now() - timedelta(minutes=10))
    File.objects.filter(workspace_id=kim.workspace_id).update(updated_at=timezone.now() - timedelta(minutes=3))
    row = dashboard(course)[0]
    assert not row.editing and row.last_edit is not None
    html = signed_in(teacher).get(f"/classroom/{course.pk}/students").content.decode()
    assert 'data-field="presence">idle · last edit 3\xa0minutes ago' in html


def test_watching_a_student_makes_the_teacher_a_viewer_of_their_session(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    browser = signed_in(teacher)
    response = browser.post(f"/classroom/{course.pk}/students/{kim.pk}/watch")
    session = student_session(kim)
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.id}/"
    assert Participant.objects.get(session=session, user=teacher).role == Role.VIEWER
    page = browser.get(f"/sessions/{session.id}/").content.decode()
    assert "You are watching" in page
    assert browser.post(f"/classroom/{course.pk}/students/999/watch").status_code == 404


def test_the_prompts_page_lists_each_students_prompts(course: Course, teacher: User) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    Turn.objects.create(id="a", session=student_session(kim), prompt="why is <b>x</b> None?", metrics={"tokens": 12})
    Turn.objects.create(id="b", session=student_session(kim), prompt="fix the loop")
    html = signed_in(teacher).get(f"/classroom/{course.pk}/prompts").content.decode()
    kim_part = html.split('data-student="Kim"')[1].split("</ol>")[0]
    assert kim_part.index("why is &lt;b&gt;x&lt;/b&gt; None?") < kim_part.index("fix the loop")
    assert "12 tokens" in kim_part
    assert html.split("<h2>Lee</h2>")[1].lstrip().startswith('<p class="hint">No prompt yet.')
    assert lee.workspace_id != kim.workspace_id


# -- pushing a file -------------------------------------------------------------------------


def test_push_replaces_unchanged_files_and_puts_the_teachers_beside_changed_ones(
    course: Course, teacher: User
) -> None:
    same, changed, deleted = enrol(course, "same"), enrol(course, "changed"), enrol(course, "deleted")
    file_write(workspace=changed.workspace, path="main.py", data="print('mine')\n")
    file_delete(workspace=deleted.workspace, path="main.py")
    response = signed_in(teacher).post(
        f"/classroom/{course.pk}/push", {"path": "main.py", "text": "print('v2')\n"}
    )
    assert response.status_code == 200
    report = response.content.decode()
    assert "replaced for 1 student(s) (Same)" in report and "Changed, Deleted" in report

    def files(enrollment: Enrollment) -> dict[str, str]:
        return dict(enrollment.workspace.files.values_list("path", "text"))

    assert files(same)["main.py"] == "print('v2')\n" and "main.teacher.py" not in files(same)
    assert files(changed)["main.py"] == "print('mine')\n"
    assert files(changed)["main.teacher.py"] == "print('v2')\n"
    assert "main.py" not in files(deleted) and files(deleted)["main.teacher.py"] == "print('v2')\n"
    assert course.template.files.get(path="main.py").text == "print('v2')\n"
    # The replaced copy now counts v2 as the teacher's: a second push replaces it again.
    signed_in(teacher).post(f"/classroom/{course.pk}/push", {"path": "main.py", "text": "print('v3')\n"})
    assert files(same)["main.py"] == "print('v3')\n"
    assert files(changed)["main.teacher.py"] == "print('v3')\n"


def test_push_of_a_new_file_lands_in_every_copy(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    signed_in(teacher).post(f"/classroom/{course.pk}/push", {"path": "lib/extra.py", "text": "Y = 2\n"})
    assert kim.workspace.files.get(path="lib/extra.py").text == "Y = 2\n"


def test_push_refuses_a_bad_path_clearly(course: Course, teacher: User) -> None:
    enrol(course, "kim")
    response = signed_in(teacher).post(f"/classroom/{course.pk}/push", {"path": "../etc/passwd", "text": "x"})
    assert response.status_code == 400 and 'data-code="bad_path"' in response.content.decode()


def test_beside_path_rule() -> None:
    assert beside_path("src/main.py", "teacher") == "src/main.teacher.py"
    assert beside_path("Makefile", "teacher") == "Makefile.teacher"
    assert beside_path(".env", "teacher") == ".env.teacher"


# -- policy, archive, delete ---------------------------------------------------------------------


def test_the_policy_form_saves_and_refuses_bad_values(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    policy = {"ai_mode": "explain", "max_effort": "low", "token_quota": "500"}
    ok = browser.post(f"/classroom/{course.pk}/policy", policy)
    assert ok.status_code == 302
    course.refresh_from_db()
    assert (course.ai_mode, course.max_effort, course.token_quota) == ("explain", "low", 500)
    for bad, code in (({"ai_mode": "maybe"}, "bad_mode"), ({"ai_mode": "on", "max_effort": "huge"}, "bad_effort"),
                      ({"ai_mode": "on", "token_quota": "lots"}, "bad_quota"),
                      ({"ai_mode": "on", "token_quota": "-1"}, "bad_quota")):
        response = browser.post(f"/classroom/{course.pk}/policy", bad)
        assert response.status_code == 400 and f'data-code="{code}"' in response.content.decode()
    course.refresh_from_db()
    assert (course.ai_mode, course.max_effort, course.token_quota) == ("explain", "low", 500)


def test_deleting_student_data_asks_for_the_course_name_first(course: Course, teacher: User) -> None:
    kim, lee = enrol(course, "kim"), enrol(course, "lee")
    ada, _ = course_join_as_guest(course=course, name="Ada")  # a guest the course made: goes too
    bea, _ = course_join_as_guest(course=course, name="Bea")  # a guest also invited elsewhere: stays
    Participant.objects.create(session=student_session(lee), user=bea, role=Role.VIEWER)
    Participant.objects.create(session=session_for_workspace(workspace=course.template, by=teacher)[0],
                               user=bea, role=Role.VIEWER)
    browser = signed_in(teacher)
    url = f"/classroom/{course.pk}/delete/students"
    assert browser.get(url).status_code == 200
    assert browser.post(url, {"confirm": "wrong"}).status_code == 400
    assert Enrollment.objects.count() == 4
    assert browser.post(url, {"confirm": "Python 101"}).status_code == 302
    assert not Enrollment.objects.exists()
    assert not User.objects.filter(pk=ada.pk).exists() and User.objects.filter(pk=bea.pk).exists()
    assert User.objects.filter(pk__in=[kim.student_id, lee.student_id]).count() == 2  # own accounts stay
    assert not Workspace.objects.filter(pk__in=[kim.workspace_id, lee.workspace_id]).exists()
    assert Course.objects.filter(pk=course.pk).exists() and Workspace.objects.filter(pk=course.template_id).exists()


def test_deleting_the_course_keeps_the_template(course: Course, teacher: User) -> None:
    kim = enrol(course, "kim")
    browser = signed_in(teacher)
    assert browser.post(f"/classroom/{course.pk}/delete/course", {"confirm": "Python 101"}).status_code == 302
    assert not Course.objects.exists() and not Workspace.objects.filter(pk=kim.workspace_id).exists()
    assert Workspace.objects.filter(pk=course.template_id).exists()


def test_archive_and_reopen(course: Course, teacher: User) -> None:
    browser = signed_in(teacher)
    browser.post(f"/classroom/{course.pk}/archive", {"archived": "1"})
    course.refresh_from_db()
    assert course.archived
    assert Client().get(f"/join/{course.code}").status_code == 403
    browser.post(f"/classroom/{course.pk}/archive", {"archived": "0"})
    course.refresh_from_db()
    assert not course.archived and Client().get(f"/join/{course.code}").status_code == 200
