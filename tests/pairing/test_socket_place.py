"""A session socket's connect reads its session and the person's role in one statement
(``socket_place``): the same answer ``role_for`` gives, for every kind of person and for
sessions that are not there. (A student's copy in an archived course: tests/classroom/test_join.py.)"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser

from spark_ide.pairing.models import Participant, Role
from spark_ide.pairing.services import role_for, session_create, socket_place
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


def test_it_answers_as_role_for_does_for_owner_members_and_strangers(user: Any, django_user_model: Any) -> None:
    workspace = workspace_create(owner=user, name="w")
    session = session_create(workspace=workspace, by=user)
    viewer, collaborator, stranger = (django_user_model.objects.create_user(username=name)
                                      for name in ("vic", "col", "sam"))
    Participant.objects.create(session=session, user=viewer, role=Role.VIEWER)
    Participant.objects.create(session=session, user=collaborator, role=Role.COLLABORATOR)
    expected = {user: Role.OWNER, viewer: Role.VIEWER, collaborator: Role.COLLABORATOR, stranger: None}
    for person, role in expected.items():
        place, found = socket_place(str(session.id), person)
        assert place is not None and (place.id, place.workspace_id) == (session.id, workspace.id)
        assert found == role == role_for(session=session, user=person), person
    # Removed from the session: no role any more.
    Participant.objects.filter(user=viewer).delete()
    assert socket_place(str(session.id), viewer)[1] is None


def test_no_such_session_a_bad_id_or_nobody_signed_in_is_no_place(user: Any) -> None:
    session = session_create(workspace=workspace_create(owner=user, name="w"), by=user)
    assert socket_place(str(uuid.uuid4()), user) == (None, None)
    assert socket_place("not-a-uuid", user) == (None, None)
    assert socket_place(str(session.id), AnonymousUser()) == (None, None)
