"""A workspace's test-rounds switch (issue 30): ``PATCH /api/workspaces/<id>`` ``{"auto_test":
true | false | null}`` for its owner and collaborators; viewers are refused, others told it
does not exist, bad values refused with nothing changed; the live page shows the switch."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.accounts.services import api_token_create
from spark_ide.pairing.models import Participant, Role, Session
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user: User) -> Session:
    workspace = workspace_create(owner=user, name="shared", files={"test_a.py": "def test_a():\n    assert 1\n"})
    return session_create(workspace=workspace, by=user)


def token_client(user: User) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {api_token_create(user=user)}"
    return client


def member(session: Session, username: str, role: Role) -> User:
    person = User.objects.create_user(username=username)
    Participant.objects.create(session=session, user=person, role=role)
    return person


def patch(client: Client, session: Session, body: Any) -> Any:
    return client.patch(f"/api/workspaces/{session.workspace_id}", body, content_type="application/json")


def stored(session: Session) -> bool | None:
    return Workspace.objects.get(pk=session.workspace_id).auto_test


def test_the_owner_sets_and_clears_the_workspaces_choice(api: Client, session: Session) -> None:
    assert api.get(f"/api/workspaces/{session.workspace_id}").json()["auto_test"] is None  # the server decides
    updated_at = Workspace.objects.get(pk=session.workspace_id).updated_at
    for value in (False, True, None):
        answer = patch(api, session, {"auto_test": value})
        assert answer.status_code == 200
        assert answer.json()["auto_test"] is value and answer.json()["name"] == "shared"
        assert stored(session) is value
        assert api.get(f"/api/workspaces/{session.workspace_id}").json()["auto_test"] is value
    assert Workspace.objects.get(pk=session.workspace_id).updated_at == updated_at  # no file changed
    assert patch(api, session, {}).status_code == 200  # nothing to change: nothing changed
    assert stored(session) is None


def test_a_collaborator_may_change_it_a_viewer_or_a_stranger_may_not(session: Session) -> None:
    collaborator = token_client(member(session, "cleo", Role.COLLABORATOR))
    answer = patch(collaborator, session, {"auto_test": False})
    assert answer.status_code == 200 and stored(session) is False
    viewer = token_client(member(session, "vic", Role.VIEWER))
    refused = patch(viewer, session, {"auto_test": True})
    assert refused.status_code == 403
    assert refused.json() == {"error": {
        "code": "forbidden", "message": "only the owner and collaborators change the workspace's settings",
    }}
    stranger = token_client(User.objects.create_user(username="sid"))
    hidden = patch(stranger, session, {"auto_test": True})
    # The same answer as for a workspace that does not exist: nothing revealed.
    assert hidden.status_code == 404
    assert hidden.json() == {"error": {"code": "not_found", "message": f"no workspace {session.workspace_id}"}}
    assert stored(session) is False
    # GET and DELETE stay the owner's.
    assert collaborator.get(f"/api/workspaces/{session.workspace_id}").status_code == 404
    assert collaborator.delete(f"/api/workspaces/{session.workspace_id}").status_code == 404
    assert Workspace.objects.filter(pk=session.workspace_id).exists()


@pytest.mark.parametrize("body", [
    {"auto_test": "yes"}, {"auto_test": 1}, {"auto_test": "true"}, {"auto_test": []}, {"auto_test": {}},
])
def test_a_bad_value_is_refused_and_nothing_changes(api: Client, session: Session, body: dict[str, Any]) -> None:
    patch(api, session, {"auto_test": True})
    refused = patch(api, session, body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "bad_field"
    assert error["message"].startswith("'auto_test' must be true, false or null (the server's default), not ")
    assert stored(session) is True


def test_an_unknown_field_or_a_body_that_is_not_json_is_refused(api: Client, session: Session) -> None:
    refused = patch(api, session, {"auto_test": False, "name": "renamed"})
    assert refused.status_code == 400
    said = "cannot change 'name': a PATCH changes auto_test, model"
    assert refused.json()["error"] == {"code": "bad_field", "message": said}
    assert stored(session) is None and Workspace.objects.get(pk=session.workspace_id).name == "shared"
    broken = api.patch(f"/api/workspaces/{session.workspace_id}", "{no", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "malformed_json"
    listed = api.patch("/api/workspaces", {"auto_test": True}, content_type="application/json")
    assert listed.status_code == 405


def test_a_guest_collaborator_switches_it_from_the_page_with_the_csrf_token(session: Session) -> None:
    guest = Client()
    joined = guest.post(f"/sessions/{session.id}/join/{session.collaborator_key}", {"name": "Grace"})
    assert joined.status_code == 302
    guest.handler.enforce_csrf_checks = True  # as a browser: the page's token, or a refusal
    page = guest.get(f"/sessions/{session.id}/")
    csrf = page.cookies["csrftoken"].value
    assert patch(guest, session, {"auto_test": False}).json()["error"]["code"] == "csrf_failed"
    answer = guest.patch(
        f"/api/workspaces/{session.workspace_id}", {"auto_test": False}, content_type="application/json",
        headers={"X-CSRFToken": csrf},
    )
    assert answer.status_code == 200 and stored(session) is False
    # The rest of the workspace API stays closed to guests.
    read = guest.get(f"/api/workspaces/{session.workspace_id}")
    assert read.status_code == 403 and read.json()["error"]["code"] == "guest_forbidden"


def test_an_archived_courses_copy_is_read_only(teacher_course_copy: Any) -> None:
    student, workspace_id = teacher_course_copy
    answer = token_client(student).patch(
        f"/api/workspaces/{workspace_id}", {"auto_test": False}, content_type="application/json",
    )
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "read_only"
    assert Workspace.objects.get(pk=workspace_id).auto_test is None


@pytest.fixture
def teacher_course_copy(django_user_model: Any) -> tuple[User, Any]:
    from spark_ide.classroom.services import course_archive, course_create, course_join, teacher_grant

    teacher = django_user_model.objects.create_user(username="teach")
    teacher_grant(teacher)
    course = course_create(teacher=teacher, name="C", template=workspace_create(owner=teacher, name="t"))
    student = django_user_model.objects.create_user(username="kim")
    enrollment, _ = course_join(course=course, user=student)
    course_archive(course=course)
    return student, enrollment.workspace_id


# -- the live page's switch ------------------------------------------------------------------


def switch_of(html: str) -> str:
    return html.split('id="auto-test"')[1].split("</div>")[0]


def test_the_page_shows_whether_test_rounds_run_here(user: User, session: Session, settings: Any) -> None:
    owner = Client()
    owner.force_login(user)
    url = f"/sessions/{session.id}/"
    switch = switch_of(owner.get(url).content.decode())
    assert 'data-choice="null" data-default="true"' in switch
    assert 'name="auto_test" checked>' in switch and "(the server's default: on)" in switch
    assert "Test rounds: run the tests after the model's changes" in switch
    assert f'data-url="/api/workspaces/{session.workspace_id}"' in switch
    settings.SPARK_AUTO_TEST = False
    switch = switch_of(owner.get(url).content.decode())
    assert 'name="auto_test">' in switch and "(the server's default: off)" in switch
    Workspace.objects.filter(pk=session.workspace_id).update(auto_test=True)
    switch = switch_of(owner.get(url).content.decode())
    assert 'data-choice="true"' in switch and 'name="auto_test" checked>' in switch
    assert "(this workspace's choice)" in switch and 'data-auto-test="reset">' in switch
    viewer = Client()
    viewer.force_login(member(session, "vic", Role.VIEWER))
    switch = switch_of(viewer.get(url).content.decode())
    assert 'name="auto_test" checked disabled>' in switch and 'data-auto-test="reset"' not in switch
