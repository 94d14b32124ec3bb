"""With the student's room open: the dashboard shows them editing, and a pushed file reaches
their live document (or lands beside what they typed)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.classroom import services as classroom_services
from spark_ide.classroom.models import Course, Enrollment
from spark_ide.classroom.services import (
    course_archive,
    course_create,
    course_join,
    file_push,
    student_session,
    teacher_grant,
    teacher_watch,
)
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Role
from spark_ide.pairing.services import role_for
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import WorkspaceError, file_text, file_write, workspace_create
from tests.pairing.conftest import Live, LiveClient, connect, rooms, token_for  # noqa: F401  (rooms: a fixture)

from .conftest import TEMPLATE

pytestmark = pytest.mark.django_db(transaction=True)


def setup_course() -> tuple[User, Course, Enrollment]:
    teacher = User.objects.create_user(username="teach")
    teacher_grant(teacher)
    template = workspace_create(owner=teacher, name="Exercise", files=dict(TEMPLATE))
    course = course_create(teacher=teacher, name="Python 101", template=template)
    student = User.objects.create_user(username="kim")
    enrollment, _ = course_join(course=course, user=student, display_name="Kim")
    return teacher, course, enrollment


def dashboard_html(teacher: User, course: Course) -> str:
    client = Client()
    client.force_login(teacher)
    return str(client.get(f"/classroom/{course.pk}/students").content.decode())


async def connect_student(enrollment: Enrollment) -> LiveClient:
    """The student's page on their copy's live session."""
    session = await database_sync_to_async(student_session)(enrollment)
    student = enrollment.student
    return await connect(Live(str(session.id), str(enrollment.workspace_id), await token_for(student), student))


async def test_an_open_room_shows_the_student_editing_and_gets_pushed_files(rooms: None) -> None:  # noqa: F811
    teacher, course, enrollment = await database_sync_to_async(setup_course)()
    student = await connect_student(enrollment)
    await student.pump(0.2)
    assert 'data-field="presence">no edit yet' in await database_sync_to_async(dashboard_html)(teacher, course)
    # The student types: the room's owner persists it, and the dashboard (which reads only the
    # database, so any process answers the same) shows them editing.
    await student.type_text("README.md", 0, "my notes\n")
    room = ROOMS.owned(str(enrollment.workspace_id))
    assert room is not None
    await student.until_true(lambda: room.texts().get("README.md") == "my notes\n# Exercise 1\n")
    for _ in range(50):
        if 'data-field="presence">editing' in await database_sync_to_async(dashboard_html)(teacher, course):
            break
        await student.pump(0.05)
    else:
        raise AssertionError("the dashboard never showed the student editing")

    # Unchanged: the pushed text replaces the file in the live document the student holds.
    await database_sync_to_async(file_push)(course=course, path="main.py", text="print('v2')\n")
    await student.until_true(lambda: student.text("main.py") == "print('v2')\n")
    # The student changed README.md: a push of it lands beside, their text stays.
    report = await database_sync_to_async(file_push)(course=course, path="README.md", text="# Exercise 2\n")
    assert report.beside == ["Kim"] and report.replaced == []
    await student.until_true(lambda: student.text("README.teacher.md") == "# Exercise 2\n")
    assert student.text("README.md") == "my notes\n# Exercise 1\n"
    await student.close()


async def test_a_keystroke_between_the_pushs_read_and_its_write_is_kept(
    rooms: None, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """The push reads the student's file, finds it as copied, and writes: a keystroke of the
    student's landing in between keeps their file (the teacher's text goes beside), where the
    write used to replace it, keystroke and all."""
    _, course, enrollment = await database_sync_to_async(setup_course)()
    student = await connect_student(enrollment)
    room = ROOMS.owned(str(enrollment.workspace_id))
    assert room is not None
    loop = asyncio.get_running_loop()
    read = classroom_services._text_or_none

    def read_then_the_student_types(workspace: Workspace, path: str) -> str | None:
        text = read(workspace, path)
        if workspace.pk == enrollment.workspace_id:
            asyncio.run_coroutine_threadsafe(student.type_text("main.py", 0, "# mine\n"), loop).result(5)
            deadline = time.monotonic() + 5
            while not room.files.read_files()["main.py"].startswith("# mine\n") and time.monotonic() < deadline:
                time.sleep(0.01)  # the room has the keystroke before the push writes
        return text

    monkeypatch.setattr(classroom_services, "_text_or_none", read_then_the_student_types)
    report = await database_sync_to_async(file_push)(course=course, path="main.py", text="print('v2')\n")
    assert report.beside == ["Kim"] and report.replaced == []
    await student.until_true(lambda: student.text("main.teacher.py") == "print('v2')\n")
    assert student.text("main.py") == room.texts()["main.py"] == "# mine\nprint('hello')\n"
    await student.close()


@pytest.mark.services  # the stored file rows
def test_a_conditional_write_compares_with_the_stored_file_when_no_room_was_opened(django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user(username="owner")
    workspace = workspace_create(owner=owner, name="stored", files={"a.py": "x = 1\n"})
    with pytest.raises(WorkspaceError) as refused:
        file_write(workspace=workspace, path="a.py", data="x = 2\n", expected="x = 0\n")
    assert refused.value.code == "changed"
    with pytest.raises(WorkspaceError):
        file_write(workspace=workspace, path="b.py", data="y\n", expected="")  # there is no b.py
    file_write(workspace=workspace, path="a.py", data="x = 2\n", expected="x = 1\n")
    file_write(workspace=workspace, path="b.py", data="y\n", expected=None)
    assert file_text(workspace=workspace, path="a.py") == "x = 2\n"
    assert file_text(workspace=workspace, path="b.py") == "y\n"


async def test_a_conditional_write_refused_by_a_check_leaves_the_live_document_as_it_was(
    rooms: None, settings: Any  # noqa: F811
) -> None:
    """The file checks (here: the file limit) come before the live document is written (a
    change made on the room's loop is not undone with the transaction): a refused conditional
    write changes neither the rows nor the document."""
    _, _, enrollment = await database_sync_to_async(setup_course)()
    student = await connect_student(enrollment)
    room = ROOMS.owned(str(enrollment.workspace_id))
    assert room is not None
    settings.SPARK_MAX_WORKSPACE_FILES = len(TEMPLATE)

    def write_one_too_many() -> None:
        workspace = Workspace.objects.get(pk=enrollment.workspace_id)
        with pytest.raises(WorkspaceError) as refused:
            file_write(workspace=workspace, path="new.py", data="y = 1\n", expected=None)
        assert refused.value.code == "too_many_files"

    await database_sync_to_async(write_one_too_many)()
    await student.pump(0.2)
    assert room.texts() == TEMPLATE and student.text("new.py") is None
    await student.close()


async def test_an_archived_courses_copy_is_read_only_for_its_student_and_readable_by_the_teacher(
    rooms: None,  # noqa: F811
) -> None:
    teacher, course, enrollment = await database_sync_to_async(setup_course)()
    session = await database_sync_to_async(teacher_watch)(enrollment=enrollment, teacher=teacher)
    # The student has the copy open when the teacher archives the course: the page reconnects
    # (4012: the room moved) and comes back a viewer.
    token = await token_for(enrollment.student)
    before = Live(str(session.id), str(enrollment.workspace_id), token, enrollment.student)
    open_page = await connect(before)
    assert open_page.of("hello")[0]["role"] == Role.OWNER

    def archive_as_teacher() -> None:
        browser = Client()
        browser.force_login(teacher)
        assert browser.post(f"/classroom/{course.pk}/archive", {"archived": "1"}).status_code == 302

    await database_sync_to_async(archive_as_teacher)()
    frame = await open_page.comm.receive_output(timeout=5)
    while frame["type"] != "websocket.close":  # what was on its way before the close
        frame = await open_page.comm.receive_output(timeout=5)
    assert frame["code"] == 4012
    await ROOMS.close_all()

    def page_of(user: User) -> str:
        browser = Client()
        browser.force_login(user)
        response = browser.get(f"/sessions/{session.id}/")
        assert response.status_code == 200
        return str(response.content.decode())

    html = await database_sync_to_async(page_of)(enrollment.student)
    assert "“Python 101” is archived: this copy is read-only" in html
    assert 'id="prompt"' not in html and "You are watching" in html  # no prompt box, no Run
    assert "is archived" in await database_sync_to_async(page_of)(teacher)

    def own_page_and_api(user: User) -> tuple[str, int]:
        """The student's own way in (the workspace list's link) and the file API: read-only too."""
        browser = Client()
        browser.force_login(user)
        page = browser.get(f"/w/{enrollment.workspace_id}/")
        put = browser.put(f"/api/workspaces/{enrollment.workspace_id}/files/main.py", b"x", content_type="text/plain")
        return page.content.decode(), put.status_code

    own, put_status = await database_sync_to_async(own_page_and_api)(enrollment.student)
    assert 'id="prompt"' not in own and "is archived" in own and put_status == 409
    assert await database_sync_to_async(role_for)(session=session, user=teacher) == Role.VIEWER

    # The socket: the student joins as a viewer; an edit and a run are refused, reading works.
    live = Live(str(session.id), str(enrollment.workspace_id), await token_for(enrollment.student), enrollment.student)
    student = await connect(live)
    assert student.of("hello")[0]["role"] == Role.VIEWER
    await student.until_true(lambda: student.text("main.py") == TEMPLATE["main.py"])
    await student.type_text("main.py", 0, "# mine\n")
    await student.until(lambda e: e["type"] == "error" and "cannot edit" in e["message"])
    await student.send({"type": "run", "path": "main.py"})
    await student.until(lambda e: e["type"] == "error" and e["code"] == "forbidden" and "run" in e["message"])
    room = ROOMS.owned(str(enrollment.workspace_id))
    assert room is not None and room.texts()["main.py"] == TEMPLATE["main.py"]
    await student.close()

    # Reopened, the copy is the student's to edit again.
    await database_sync_to_async(course_archive)(course=course, archived=False)
    assert await database_sync_to_async(role_for)(session=session, user=enrollment.student) == Role.OWNER
