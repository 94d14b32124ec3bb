"""The live document's state is a blob: only the document code reads it."""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.editing.document import document_texts
from spark_ide.pairing.services import session_create, session_get
from spark_ide.workspaces.documents import document_load
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create, workspace_for

pytestmark = pytest.mark.django_db


def test_listings_and_lookups_leave_the_blob_out(user: Any) -> None:
    created = workspace_create(owner=user, name="w", files={"a.py": "x = 1\n"})
    document_load(created.id)  # the workspace now has a stored document
    assert Workspace.objects.filter(pk=created.id, ydoc__isnull=False).exists()
    assert "ydoc" in workspace_for(user=user, workspace_id=created.id).get_deferred_fields()
    assert all("ydoc" in w.get_deferred_fields() for w in user.workspaces.all())
    session = session_create(workspace=created, by=user)
    assert "ydoc" in session_get(session.id).workspace.get_deferred_fields()
    assert document_texts(document_load(created.id)) == {"a.py": "x = 1\n"}  # still loads in full
