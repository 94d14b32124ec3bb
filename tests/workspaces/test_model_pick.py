"""The model picker's API (issue 34): ``PATCH /api/workspaces/<id>`` ``{"model": name}`` for the
workspace's owner only (a collaborator and a viewer are ``forbidden``, anyone else told it does
not exist); an unknown name is ``unknown_model`` naming the models; the GET says the model and
the choices; the live page shows the picker, enabled for the owner alone. And the catalogue at
start: a bad entry is logged naming the entry and the field, the server runs with the others; a
file that does not parse stops the server with the reason."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.pairing.models import Role, Session
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.catalogue import check_at_start, entry_for
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create
from tests.support.catalogue import entry, use_catalogue

from .test_auto_test import member, patch, token_client

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session(user: User, settings: Any, tmp_path: Path) -> Session:
    use_catalogue(settings, tmp_path, 'default = "fast"\n' + entry("fast") + entry("strong"))
    workspace = workspace_create(owner=user, name="shared", files={"a.py": "x = 1\n"})
    return session_create(workspace=workspace, by=user)


def test_the_owner_picks_the_model_and_the_api_says_it(api: Client, session: Session) -> None:
    url = f"/api/workspaces/{session.workspace_id}"
    assert {key: api.get(url).json()[key] for key in ("model", "models")} == {
        "model": "fast", "models": ["fast", "strong"],  # no pick yet: the catalogue's default
    }
    answer = patch(api, session, {"model": "strong"})
    assert answer.status_code == 200 and answer.json()["model"] == "strong"
    assert Workspace.objects.get(pk=session.workspace_id).model == "strong"
    assert entry_for(session.workspace_id).name == "strong"
    assert api.get(url).json()["model"] == "strong"


def test_an_unknown_model_or_a_bad_value_is_refused_and_nothing_changes(api: Client, session: Session) -> None:
    unknown = patch(api, session, {"model": "gpt-9", "auto_test": False})
    assert unknown.status_code == 400
    said = "no model 'gpt-9' here: the models are fast, strong"
    assert unknown.json()["error"] == {"code": "unknown_model", "message": said}
    for bad in ("", None, 3, ["strong"]):
        refused = patch(api, session, {"model": bad})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_field"
        said = "'model' must be the name of one of the server's models (fast, strong)"
        assert said in refused.json()["error"]["message"]
    stored = Workspace.objects.get(pk=session.workspace_id)
    assert (stored.model, stored.auto_test) == ("", None)  # the whole PATCH refused


def test_only_the_owner_switches_a_collaborator_and_a_viewer_are_forbidden(session: Session) -> None:
    for name, role in (("cal", Role.COLLABORATOR), ("vic", Role.VIEWER)):
        refused = patch(token_client(member(session, name, role)), session, {"model": "strong"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    stranger = User.objects.create_user(username="eve")
    assert patch(token_client(stranger), session, {"model": "strong"}).status_code == 404
    assert Workspace.objects.get(pk=session.workspace_id).model == ""


def test_the_live_page_shows_the_picker_enabled_for_the_owner_only(session: Session, user: User) -> None:
    def picker(person: User) -> str:
        client = Client()
        client.force_login(person)
        page = client.get(f"/sessions/{session.id}/").content.decode()
        return page.split('id="model-picker"')[1].split("</div>")[0]

    mine = picker(user)
    assert 'data-current="fast"' in mine and 'value="fast" selected' in mine and 'value="strong"' in mine
    assert "disabled" not in mine
    assert '<select name="model" disabled>' in picker(member(session, "vic", Role.VIEWER))


def test_a_bad_entry_is_logged_naming_it_and_the_server_runs_with_the_others(
    settings: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    use_catalogue(settings, tmp_path, entry("fast") + entry("broken", edit_style="diff") + entry("strong"))
    with caplog.at_level(logging.ERROR, logger="spark_ide.workspaces.catalogue"):
        found = check_at_start()
    assert found.names == ("fast", "strong")
    assert [record.getMessage() for record in caplog.records] == [
        f"{tmp_path / 'models.toml'}: model 'broken' (entry 2): edit_style: edit_style must be one of apply-patch, "
        "apply-patch-builtin, function, edits, whole-file, got 'diff'; the entry is left out",
    ]


def test_a_catalogue_that_does_not_parse_stops_the_server_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[[models]]\nname = "fast\n')
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "OPENAI_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**clean, "SPARK_DATA_DIR": str(tmp_path), "SPARK_MODELS_FILE": str(path)},
    )
    assert done.returncode != 0
    assert f"{path} does not parse as TOML: " in done.stderr
