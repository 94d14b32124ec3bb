from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone

from spark_ide.pairing import services
from spark_ide.pairing.models import Participant, Run, Session, Turn
from spark_ide.pairing.services import session_create, session_for_workspace
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def ws(user: Any) -> Any:
    return workspace_create(owner=user, name="w", files={"a.py": "x = 1\n"})


def test_the_owner_creates_a_session_with_invites(api: Any, ws: Any) -> None:
    response = api.post(f"/api/workspaces/{ws.id}/sessions")
    assert response.status_code == 201
    body = response.json()
    session = Session.objects.get(pk=body["id"])
    assert body["ws_url"] == f"ws://testserver/ws/sessions/{session.id}/"
    assert body["invite"]["viewer"].endswith(f"/sessions/{session.id}/join/{session.viewer_key}")
    assert body["invite"]["collaborator"].endswith(f"/sessions/{session.id}/join/{session.collaborator_key}")


def test_asking_again_answers_the_workspaces_live_session(api: Any, ws: Any) -> None:
    first = api.post(f"/api/workspaces/{ws.id}/sessions")
    again = api.post(f"/api/workspaces/{ws.id}/sessions")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert Session.objects.count() == 1


def test_the_earliest_session_is_the_workspaces_one(api: Any, ws: Any, user: Any) -> None:
    earliest = session_create(workspace=ws, by=user)
    later = session_create(workspace=ws, by=user)
    Session.objects.filter(pk=later.pk).update(created_at=earliest.created_at + timedelta(seconds=1))
    assert session_for_workspace(workspace=ws, by=user) == (earliest, False)
    response = api.post(f"/api/workspaces/{ws.id}/sessions")
    assert (response.status_code, response.json()["id"]) == (200, str(earliest.id))


def test_a_session_made_while_looking_is_found_not_doubled(ws: Any, user: Any) -> None:
    """Another request makes the session between this one's first look and its lock."""
    theirs: list[Session] = []

    def the_other_request_wins(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not theirs and sql.startswith('SELECT "workspaces_workspace"."id" FROM "workspaces_workspace"'):
            theirs.append(session_create(workspace=ws, by=user))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(the_other_request_wins):
        session, created = session_for_workspace(workspace=ws, by=user)
    assert theirs, "the workspace row was never locked"
    assert (session, created) == (theirs[0], False)
    assert Session.objects.filter(workspace=ws).count() == 1


def test_nobody_else_creates_a_session_on_my_workspace(client: Client, ws: Any, other_user: Any) -> None:
    client.force_login(other_user)
    response = client.post(f"/api/workspaces/{ws.id}/sessions")
    assert response.status_code == 404
    assert not Session.objects.exists()


def test_session_creation_needs_auth(client: Client, ws: Any) -> None:
    assert client.post(f"/api/workspaces/{ws.id}/sessions").status_code == 401


def test_turns_are_listed_for_participants_only(api: Any, ws: Any, user: Any, other_user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    Turn.objects.create(id="t1", session=session, prompt="make it faster", status="completed", metrics={"tokens": 5})
    Turn.objects.create(id="t2", session=session, prompt="no, simpler", status="completed", steered_from_id="t1")
    rows = api.get(f"/api/sessions/{session.id}/turns").json()
    assert [(r["id"], r["prompt"], r["status"], r["steered_from"]) for r in rows] == [
        ("t1", "make it faster", "completed", None),
        ("t2", "no, simpler", "completed", "t1"),
    ]
    assert rows[0]["metrics"] == {"tokens": 5}
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/api/sessions/{session.id}/turns").status_code == 404
    assert api.get(f"/api/sessions/{uuid.uuid4()}/turns").status_code == 404
    assert api.get("/api/sessions/bad/turns").json()["error"]["code"] == "not_found"


def test_an_invite_link_grants_its_role(client: Client, ws: Any, user: Any, other_user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    client.force_login(other_user)
    assert client.get(f"/sessions/{session.id}/").status_code == 404
    viewer_link = f"/sessions/{session.id}/join/{session.viewer_key}"
    # Opening the link (a GET: a link preview or a prefetch does it too) changes nothing: it
    # asks; the button (a POST, with the CSRF token) joins.
    confirm = client.get(viewer_link)
    assert confirm.status_code == 200 and "Join as viewer" in confirm.content.decode()
    assert not Participant.objects.filter(user=other_user).exists()
    response = client.post(viewer_link)
    assert response["Location"] == f"/sessions/{session.id}/"
    assert Participant.objects.get(user=other_user).role == "viewer"
    assert client.get(viewer_link)["Location"] == f"/sessions/{session.id}/"  # in already: straight there
    page = client.get(f"/sessions/{session.id}/")
    assert page.status_code == 200
    assert page.context["role"] == "viewer"
    assert page.context["can_drive"] is False
    upgrade = client.get(f"/sessions/{session.id}/join/{session.collaborator_key}")
    assert "already take part as a viewer" in upgrade.content.decode()
    assert Participant.objects.get(user=other_user).role == "viewer"
    client.post(f"/sessions/{session.id}/join/{session.collaborator_key}")
    assert Participant.objects.get(user=other_user).role == "collaborator"
    assert client.post(viewer_link)["Location"] == f"/sessions/{session.id}/"  # never a downgrade
    assert Participant.objects.get(user=other_user).role == "collaborator"


def test_the_owners_own_invite_link_leads_back_to_the_session(client: Client, ws: Any, user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    client.force_login(user)
    for key in (session.viewer_key, session.collaborator_key):
        assert client.get(f"/sessions/{session.id}/join/{key}")["Location"] == f"/sessions/{session.id}/"
    assert not Participant.objects.filter(user=user).exclude(role="owner").exists()


def test_a_wrong_invite_key_is_refused(client: Client, ws: Any, user: Any, other_user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    client.force_login(other_user)
    response = client.get(f"/sessions/{session.id}/join/nope")
    assert response.status_code == 404  # a page that says so, not a redirect
    assert "this invite link is not valid" in response.content.decode().lower()
    assert not Participant.objects.filter(user=other_user).exists()


def test_opening_the_workspace_opens_its_live_session_as_owner(client: Client, ws: Any, user: Any) -> None:
    client.force_login(user)
    page = client.get(f"/w/{ws.id}/")
    session = Session.objects.get()
    assert page.context["session"] == session
    assert page.context["role"] == "owner"
    assert page.context["invites"]["viewer"].endswith(session.viewer_key)
    assert page.context["tree_url"] == f"/sessions/{session.id}/tree"
    assert client.get(f"/w/{ws.id}/").context["session"] == session  # the same one, every time


def test_the_owner_sees_the_same_page_at_the_session_url(client: Client, ws: Any, user: Any) -> None:
    client.force_login(user)
    at_workspace = client.get(f"/w/{ws.id}/")
    session = at_workspace.context["session"]
    at_session = client.get(f"/sessions/{session.id}/")
    keys = ("session", "role", "can_edit", "ws_path", "tree_url", "history_url", "invites")
    assert [at_session.context[k] for k in keys] == [at_workspace.context[k] for k in keys]


def test_every_session_of_the_workspace_shows_every_turn(api: Any, client: Client, ws: Any, user: Any) -> None:
    one, two = session_create(workspace=ws, by=user), session_create(workspace=ws, by=user)
    elsewhere = session_create(workspace=workspace_create(owner=user, name="other"), by=user)
    Turn.objects.create(id="in-one", session=one, prompt="first", status="completed")
    Turn.objects.create(id="in-two", session=two, prompt="second", status="completed")
    Turn.objects.create(id="not-here", session=elsewhere, prompt="other room", status="completed")
    client.force_login(user)
    for session in (one, two):
        assert [r["id"] for r in api.get(f"/api/sessions/{session.id}/turns").json()] == ["in-one", "in-two"]
        history = client.get(f"/sessions/{session.id}/history")
        assert [t["id"] for t in history.context["turns"]] == ["in-two", "in-one"]  # newest first


def test_the_history_shows_the_code_runs_of_the_workspace(client: Client, ws: Any, user: Any) -> None:
    one, two = session_create(workspace=ws, by=user), session_create(workspace=ws, by=user)
    elsewhere = session_create(workspace=workspace_create(owner=user, name="other"), by=user)
    Run.objects.create(id="r1", session=one, author=user, path="main.py", status="ok", exit_code=0, output="hi\n")
    Run.objects.create(id="r2", session=two, author=user, tests=True, status="failed", exit_code=1)
    Run.objects.create(id="r3", session=elsewhere, author=user, path="x.py")
    client.force_login(user)
    runs = client.get(f"/sessions/{one.id}/history").context["runs"]
    shown = [(r["id"], r["path"], r["tests"], r["by"]) for r in runs]
    assert shown == [("r2", "", True, "ada"), ("r1", "main.py", False, "ada")]
    assert runs[1]["output"] == "hi\n" and runs[0]["exit_code"] == 1


def test_the_history_lists_the_latest_turns_only(api: Any, ws: Any, user: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(services, "HISTORY_LIMIT", 3)
    session = session_create(workspace=ws, by=user)
    for i in range(5):
        Turn.objects.create(id=f"t{i}", session=session, prompt=str(i), status="completed")
    rows = api.get(f"/api/sessions/{session.id}/turns").json()
    assert [r["id"] for r in rows] == ["t2", "t3", "t4"]


def test_the_history_shows_each_changed_file_and_its_highlighted_diff_on_demand(
    client: Client, ws: Any, user: Any, other_user: Any
) -> None:
    session = session_create(workspace=ws, by=user)
    Turn.objects.create(
        id="t1", session=session, prompt="bump", status="completed",
        diff={"a.py": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"},
    )
    client.force_login(user)
    response = client.get(f"/sessions/{session.id}/history")
    assert response.status_code == 200
    assert response.context["turns"][0]["paths"] == ["a.py"]
    page = response.content.decode()
    diff_url = f"/sessions/{session.id}/history/t1/diff?path=a.py"
    assert f'data-diff="{diff_url}"' in page
    assert 'class="diff"' not in page  # drawn only when the file is opened

    diff = client.get(diff_url)
    assert diff.status_code == 200
    assert 'class="diff"' in diff.content.decode() and "x = 2" in diff.content.decode()
    assert client.get(f"/sessions/{session.id}/history/t1/diff?path=b.py").status_code == 404
    assert client.get(f"/sessions/{session.id}/history/nope/diff?path=a.py").status_code == 404
    elsewhere = session_create(workspace=workspace_create(owner=user, name="other"), by=user)
    assert client.get(f"/sessions/{elsewhere.id}/history/t1/diff?path=a.py").status_code == 404
    client.force_login(other_user)  # not in the session
    assert client.get(diff_url).status_code in (403, 404)


def test_the_history_panel_shows_the_newest_turns_and_offers_the_rest(client: Client, ws: Any, user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    base = timezone.now()
    for i in range(33):
        Turn.objects.create(id=f"t{i}", session=session, prompt=str(i), status="completed")
        Turn.objects.filter(pk=f"t{i}").update(created_at=base + timedelta(seconds=i))  # auto_now_add
    client.force_login(user)
    panel = client.get(f"/sessions/{session.id}/history")
    assert [t["id"] for t in panel.context["turns"]][:2] == ["t32", "t31"]
    assert len(panel.context["turns"]) == 30
    assert "3 earlier turns not shown." in panel.content.decode()
    everything = client.get(f"/sessions/{session.id}/history?all=1")
    assert len(everything.context["turns"]) == 33
    assert "not shown" not in everything.content.decode()
    # The choice holds when the panel is redrawn after the next turn, until "show fewer".
    assert len(client.get(f"/sessions/{session.id}/history").context["turns"]) == 33
    fewer = client.get(f"/sessions/{session.id}/history?all=0")
    assert len(fewer.context["turns"]) == 30
    assert len(client.get(f"/sessions/{session.id}/history").context["turns"]) == 30


def test_participants_use_the_session_tree_by_role(client: Client, ws: Any, user: Any, other_user: Any) -> None:
    session = session_create(workspace=ws, by=user)
    Participant.objects.create(session=session, user=other_user, role="viewer")
    client.force_login(other_user)
    url = f"/sessions/{session.id}/tree"
    assert 'data-open="a.py"' in client.get(url).content.decode()
    assert client.post(url, {"action": "delete", "path": "a.py"}).status_code == 403
    assert ws.files.filter(path="a.py").exists()
    Participant.objects.filter(user=other_user).update(role="collaborator")
    response = client.post(url, {"action": "create", "path": "b.py"})
    assert response.status_code == 200
    assert f'hx-post="{url}"' in response.content.decode()
    assert ws.files.filter(path="b.py").exists()
    stranger = Client()
    stranger.force_login(User.objects.create_user(username="zed", password="pw-zed-123"))
    assert stranger.get(url).status_code == 404
