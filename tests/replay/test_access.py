"""The replay is for the people of the session: its owner and participants see it, anyone
else (another user, a guest of another session, nobody signed in) is told it is not there."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client

from spark_ide.pairing.models import Session, Turn
from spark_ide.pairing.services import session_create, session_join
from spark_ide.workspaces.documents import document_load
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user: Any) -> Session:
    workspace = workspace_create(owner=user, name="demo", files={"a.py": "a = 1\n"})
    document_load(workspace.id)  # opened live once: its history has begun
    return session_create(workspace=workspace, by=user)


def _client(user: Any | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_the_owner_and_a_participant_get_the_replay(session: Session, user: Any, other_user: Any) -> None:
    session_join(session=session, user=other_user, key=session.viewer_key)
    for person in (user, other_user):
        data = _client(person).get(f"/sessions/{session.id}/replay/data")
        assert data.status_code == 200
        body = data.json()
        assert set(body) == {"start", "end", "checkpoints", "updates", "events", "marks"}
        assert len(body["checkpoints"]) == 1 and body["checkpoints"][0]["n"] == 0
        page = _client(person).get(f"/sessions/{session.id}/replay")
        assert page.status_code == 200
        html = page.content.decode()
        assert f'data-url="/sessions/{session.id}/replay/data"' in html
        assert 'id="replay"' in html and "<script>" not in html and "style=" not in html


def test_anyone_else_is_told_there_is_no_such_replay(session: Session, other_user: Any) -> None:
    for client in (_client(other_user), _client(None)):
        assert client.get(f"/sessions/{session.id}/replay/data").status_code == 404
    assert _client(other_user).get(f"/sessions/{session.id}/replay").status_code == 404
    page = _client(None).get(f"/sessions/{session.id}/replay")
    assert page.status_code == 302 and page["Location"].startswith("/login/?next=")
    for bad in (uuid.uuid4(), "not-a-session"):
        assert _client(other_user).get(f"/sessions/{bad}/replay/data").status_code == 404


def test_the_history_panel_links_to_the_replay_once_there_are_turns(session: Session, user: Any) -> None:
    client = _client(user)
    assert "/replay" not in client.get(f"/sessions/{session.id}/history").content.decode()
    Turn.objects.create(id="t1", session=session, author=user, prompt="hello", status="completed")
    assert f'href="/sessions/{session.id}/replay"' in client.get(f"/sessions/{session.id}/history").content.decode()
