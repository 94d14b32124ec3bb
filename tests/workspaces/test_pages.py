from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from spark_ide.pairing.models import Participant, Session
from spark_ide.pairing.services import session_for_workspace
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def test_the_list_shows_my_workspaces_only(browser: Client, user: Any, other_user: Any) -> None:
    workspace_create(owner=user, name="mine")
    workspace_create(owner=other_user, name="theirs")
    page = browser.get("/").content.decode()
    assert "mine" in page
    assert "theirs" not in page


def test_it_creates_a_workspace_from_the_list(browser: Client) -> None:
    response = browser.post("/workspaces/new", {"name": "course"})
    created = Workspace.objects.get(name="course")
    assert response["Location"] == f"/w/{created.id}/"


def test_an_empty_name_is_reported(browser: Client) -> None:
    response = browser.post("/workspaces/new", {"name": "  "}, follow=True)
    assert "a workspace name is 1 to 200 characters" in response.content.decode()
    assert Workspace.objects.count() == 0


def test_the_workspace_page_shows_the_tree(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"src/app.py": "", "README.md": ""})
    page = browser.get(f"/w/{ws.id}/").content.decode()
    assert 'data-open="src/app.py"' in page
    assert 'data-open="README.md"' in page
    assert "<summary>src</summary>" in page


def test_the_workspace_page_is_the_live_editor(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"a.py": "x = 1\n"})
    page = browser.get(f"/w/{ws.id}/").content.decode()
    session = Session.objects.get(workspace=ws)
    assert f'data-ws-path="/ws/sessions/{session.id}/"' in page  # the Yjs editor's socket
    assert 'aria-label="Prompt"' in page
    assert 'id="transcript"' in page
    assert f'hx-get="/sessions/{session.id}/history"' in page
    assert "Start live session" not in page
    assert 'id="ide"' not in page  # the old whole-file editor is gone


def test_the_owners_crumbs_lead_to_the_list_and_the_export(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w")
    page = browser.get(f"/w/{ws.id}/").content.decode()
    assert '<a href="/">Workspaces</a> / <span class="crumb-name">w</span>' in page
    assert f'href="/w/{ws.id}/export.zip"' in page


def test_a_participant_sees_no_export_and_no_invites(client: Client, user: Any, other_user: Any) -> None:
    ws = workspace_create(owner=user, name="w")
    session, _ = session_for_workspace(workspace=ws, by=user)
    Participant.objects.create(session=session, user=other_user, role="collaborator")
    client.force_login(other_user)
    page = client.get(f"/sessions/{session.id}/").content.decode()
    assert 'aria-label="Prompt"' in page
    assert "export.zip" not in page
    assert 'class="invites"' not in page
    assert client.get(f"/w/{ws.id}/").status_code == 404  # the workspace URL is the owner's


def test_another_users_workspace_page_is_404(browser: Client, other_user: Any) -> None:
    theirs = workspace_create(owner=other_user, name="t")
    assert browser.get(f"/w/{theirs.id}/").status_code == 404
    assert browser.get(f"/w/{theirs.id}/export.zip").status_code == 404
    assert not Session.objects.exists()


def _tree(ws: Workspace) -> str:
    """The tree partial's address, as the workspace page renders it."""
    session, _ = session_for_workspace(workspace=ws, by=ws.owner)
    return f"/sessions/{session.id}/tree"


def test_the_tree_creates_a_file_and_asks_the_editor_to_open_it(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w")
    response = browser.post(_tree(ws), {"action": "create", "path": "pkg/mod.py"}, HTTP_HX_REQUEST="true")
    assert 'data-open="pkg/mod.py"' in response.content.decode()
    assert json.loads(response["HX-Trigger-After-Swap"]) == {"spark:open": {"path": "pkg/mod.py"}}
    assert ws.files.get().path == "pkg/mod.py"


def test_the_tree_answers_with_its_files_and_never_its_new_file_form(browser: Client, user: Any) -> None:
    """Someone may be typing a path into the form when an answer or a refresh is drawn: only
    the files (#tree-files, the tree's htmx target) are drawn again, the form is the page's."""
    ws = workspace_create(owner=user, name="w", files={"a.py": ""})
    tree = _tree(ws)
    page = browser.get(f"/w/{ws.id}/", follow=True).content.decode()
    assert 'hx-target="#tree-files"' in page and 'name="path"' in page and 'id="tree-files"' in page
    answers = [
        browser.get(tree, HTTP_HX_REQUEST="true"),
        browser.post(tree, {"action": "create", "path": "b.py"}, HTTP_HX_REQUEST="true"),
        browser.post(tree, {"action": "create", "path": "b.py"}, HTTP_HX_REQUEST="true"),  # refused
    ]
    for answer in answers:
        html = answer.content.decode()
        assert html.lstrip().startswith('<div id="tree-files"'), html
        assert 'name="path"' not in html
    assert 'data-open="b.py"' in answers[1].content.decode()
    assert "b.py already exists" in answers[2].content.decode()


def test_the_tree_refuses_to_overwrite_on_create(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"a.py": "keep me"})
    response = browser.post(_tree(ws), {"action": "create", "path": "a.py"}, HTTP_HX_REQUEST="true")
    assert "a.py already exists" in response.content.decode()
    assert ws.files.get().text == "keep me"


def test_the_tree_reports_a_bad_path(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w")
    response = browser.post(_tree(ws), {"action": "create", "path": "../x"}, HTTP_HX_REQUEST="true")
    assert "is not allowed in a workspace path" in response.content.decode()
    assert not ws.files.exists()


def test_the_tree_renames_with_the_htmx_prompt(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"a.py": "x = 1"})
    response = browser.post(
        _tree(ws), {"action": "rename", "path": "a.py"}, HTTP_HX_REQUEST="true", HTTP_HX_PROMPT="lib/b.py"
    )
    assert json.loads(response["HX-Trigger-After-Swap"]) == {"spark:renamed": {"path": "a.py", "new_path": "lib/b.py"}}
    renamed = ws.files.get()
    assert (renamed.path, renamed.text) == ("lib/b.py", "x = 1")


def test_the_tree_refuses_a_rename_onto_an_existing_file(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"a.py": "1", "b.py": "2"})
    response = browser.post(_tree(ws), {"action": "rename", "path": "a.py", "new_path": "b.py"})
    assert "b.py already exists" in response.content.decode()
    assert sorted(ws.files.values_list("path", "text")) == [("a.py", "1"), ("b.py", "2")]


def test_the_tree_deletes_a_file(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w", files={"a.py": ""})
    response = browser.post(_tree(ws), {"action": "delete", "path": "a.py"})
    assert json.loads(response["HX-Trigger-After-Swap"]) == {"spark:deleted": {"path": "a.py"}}
    assert not ws.files.exists()


def test_the_tree_rejects_an_unknown_action(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="w")
    assert "unknown action" in browser.post(_tree(ws), {"action": "chmod"}).content.decode()


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return buffer.getvalue()


def test_it_imports_a_zip_dropping_the_common_folder_and_skipping_binaries(browser: Client) -> None:
    png = b"\x89PNG\r\n\x1a\n\xff"
    data = _zip({"course/ex1.py": b"print(1)\n", "course/img/logo.png": png, "course/notes.md": b"# n"})
    response = browser.post("/workspaces/import", {"archive": SimpleUploadedFile("course.zip", data)}, follow=True)
    ws = Workspace.objects.get()
    assert ws.name == "course"
    assert sorted(ws.files.values_list("path", flat=True)) == ["ex1.py", "notes.md"]
    assert "Skipped img/logo.png" in response.content.decode()


def test_it_refuses_a_zip_with_escaping_paths_per_file(browser: Client) -> None:
    data = _zip({"../evil.py": b"x", "ok.py": b"y"})
    response = browser.post("/workspaces/import", {"archive": SimpleUploadedFile("a.zip", data)}, follow=True)
    ws = Workspace.objects.get()
    assert list(ws.files.values_list("path", flat=True)) == ["ok.py"]
    assert "Skipped ../evil.py" in response.content.decode()


def test_it_reports_a_file_that_is_not_a_zip(browser: Client) -> None:
    response = browser.post("/workspaces/import", {"archive": SimpleUploadedFile("a.zip", b"nope")}, follow=True)
    assert "the upload is not a zip archive" in response.content.decode()
    assert Workspace.objects.count() == 0


def test_it_imports_a_folder_with_relative_paths(browser: Client) -> None:
    response = browser.post(
        "/workspaces/import",
        {
            "files": [SimpleUploadedFile("a.py", b"a"), SimpleUploadedFile("b.js", b"b")],
            "paths": ["proj/src/a.py", "proj/b.js"],
        },
    )
    ws = Workspace.objects.get()
    assert response["Location"] == f"/w/{ws.id}/"
    assert ws.name == "proj"
    assert sorted(ws.files.values_list("path", flat=True)) == ["b.js", "src/a.py"]


def test_it_exports_a_zip(browser: Client, user: Any) -> None:
    ws = workspace_create(owner=user, name="my ws", files={"a.py": "1", "d/b.txt": "é"})
    response = browser.get(f"/w/{ws.id}/export.zip")
    assert response["Content-Type"] == "application/zip"
    assert 'filename="my_ws.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert {n: archive.read(n).decode() for n in archive.namelist()} == {"a.py": "1", "d/b.txt": "é"}


@override_settings(SPARK_MAX_FILE_BYTES=100)
def test_oversized_files_in_a_zip_or_a_folder_are_skipped_and_reported(browser: Client) -> None:
    data = _zip({"big.txt": b"x" * 5000, "ok.py": b"y = 1\n"})
    response = browser.post("/workspaces/import", {"archive": SimpleUploadedFile("a.zip", data)}, follow=True)
    assert "Skipped big.txt: big.txt is larger than the limit of 100 bytes" in response.content.decode()
    response = browser.post(
        "/workspaces/import",
        {"files": [SimpleUploadedFile("big.txt", b"x" * 5000)], "paths": ["proj/big.txt"], "name": "f"},
        follow=True,
    )
    assert "Skipped big.txt" in response.content.decode()
    assert sorted(Workspace.objects.values_list("name", flat=True)) == ["a", "f"]
    assert list(Workspace.objects.get(name="a").files.values_list("path", flat=True)) == ["ok.py"]
