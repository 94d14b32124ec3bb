"""The Django side of the model's runs (issue 30): the room's store records who ran what (a
run of the model's, its command and turn) and reads the workspace's test-rounds switch; the
history panel and the teacher's dashboard say "run by the model" with the command; the
server's settings reach the room."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connections
from django.test import Client

from spark_ide.live.store import RunOutcome, RunRecord
from spark_ide.pairing.adapter import DatabaseRoomStore, live_settings
from spark_ide.pairing.models import Run, Session
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create


async def opened_store(owner: Any) -> tuple[DatabaseRoomStore, Session]:
    def make() -> tuple[Workspace, Session]:
        workspace = workspace_create(owner=owner, name="w", files={"test_a.py": "def test_a():\n    assert 0\n"})
        return workspace, session_create(workspace=workspace, by=owner)

    workspace, session = await database_sync_to_async(make)()
    store = DatabaseRoomStore(workspace.id)
    await database_sync_to_async(store._open)()
    return store, session


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
async def test_a_run_of_the_model_is_recorded_with_its_command_and_turn(django_user_model: Any) -> None:
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    store, session = await opened_store(owner)
    await store.run_started(RunRecord(
        run="r1", session=str(session.id), author_id=owner.pk, path="", tests=True,
        command="pytest -x -q test_a.py", by_model=True, turn="t7",
    ))
    await store.run_finished(RunOutcome(
        run="r1", status="error", exit_code=1, duration_ms=40, output="1 failed", message="",
    ))
    await store.run_started(RunRecord(run="r2", session=str(session.id), author_id=owner.pk, path="a.py", tests=False))
    rows = await database_sync_to_async(lambda: {
        run.id: (run.command, run.by_model, run.turn, run.status, run.shown_command) for run in Run.objects.all()
    })()
    assert rows == {
        "r1": ("pytest -x -q test_a.py", True, "t7", "error", "pytest -x -q test_a.py"),
        "r2": ("", False, "", "running", "python a.py"),  # a person's Run: shown as its button ran it
    }
    await database_sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
async def test_the_store_reads_the_workspaces_switch_for_every_turn(django_user_model: Any) -> None:
    owner = await database_sync_to_async(django_user_model.objects.create_user)(username="ada")
    store, session = await opened_store(owner)
    assert await store.auto_test() is None  # no choice: the server's SPARK_AUTO_TEST
    for value in (False, True, None):
        await database_sync_to_async(Workspace.objects.filter(pk=session.workspace_id).update)(auto_test=value)
        assert await store.auto_test() is value  # read again, not kept: the next turn sees a change
    await database_sync_to_async(connections.close_all)()


def test_the_servers_settings_reach_the_room(settings: Any) -> None:
    built = live_settings()
    assert (built.auto_test, built.run_output_to_model) == (True, 8192)  # the defaults
    settings.SPARK_AUTO_TEST, settings.SPARK_RUN_OUTPUT_TO_MODEL = False, 1024
    built = live_settings()
    assert (built.auto_test, built.run_output_to_model) == (False, 1024)


@pytest.mark.django_db
def test_the_history_and_the_dashboard_say_run_by_the_model(django_user_model: Any) -> None:
    from spark_ide.classroom.services import course_create, course_join, student_session, teacher_grant

    teacher = django_user_model.objects.create_user(username="teach")
    teacher_grant(teacher)
    course = course_create(teacher=teacher, name="C", template=workspace_create(owner=teacher, name="t"))
    kim = django_user_model.objects.create_user(username="kim")
    enrollment, _ = course_join(course=course, user=kim, display_name="Kim")
    session = student_session(enrollment)
    Run.objects.create(id="p", session=session, author=kim, path="main.py", status="ok", exit_code=0)
    Run.objects.create(id="m", session=session, author=kim, tests=True, command="pytest -k add", by_model=True,
                       turn="t1", status="error", exit_code=1)
    Run.objects.filter(pk="m").update(created_at=Run.objects.get(pk="p").created_at + timedelta(seconds=1))
    browser = Client()
    browser.force_login(kim)
    history = browser.get(f"/sessions/{session.id}/history").content.decode()
    model_run = history.split('data-run="m"')[1].split("</summary>")[0]
    assert "<code>pytest -k add</code>" in model_run and ">run by the model</span>" in model_run
    person_run = history.split('data-run="p"')[1].split("</summary>")[0]
    assert "<code>python main.py</code>" in person_run and "by kim" in person_run and "model" not in person_run
    browser.force_login(teacher)
    row = browser.get(f"/classroom/{course.pk}/students").content.decode().split('data-field="run">')[1]
    assert row.startswith("<code>pytest -k add</code> (run by the model): error (exit 1)")
