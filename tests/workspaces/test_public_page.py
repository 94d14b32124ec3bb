"""The public read-only page of a workspace (spark_ide/workspaces/public.py): off by default and
then not found; switched on by its owner only (a POST with CSRF); then readable by anyone, no
account needed, files highlighted by Pygments; nothing else opens with it."""

from __future__ import annotations

import html
import uuid
from typing import Any

import pytest
from django.test import Client

from spark_ide.editing.document import set_file_text
from spark_ide.pairing.models import Participant
from spark_ide.pairing.services import session_for_workspace, session_join_as_guest
from spark_ide.workspaces import documents, public
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import file_write, workspace_create, workspace_import

pytestmark = pytest.mark.django_db

APP = "def greet(name):\n    return f'hello {name}'\n"


@pytest.fixture
def user(django_user_model: Any) -> Any:
    """Signed in with force_login: no password, so no hashing in every test's set-up."""
    return django_user_model.objects.create_user(username="ada")


@pytest.fixture
def other_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="bob")


@pytest.fixture
def ws(user: Any) -> Workspace:
    return workspace_create(owner=user, name="Demo day", files={"src/app.py": APP, "README.md": "# Demo\n"})


@pytest.fixture
def owner(user: Any) -> Client:
    signed_in = Client(enforce_csrf_checks=True)
    signed_in.force_login(user)
    return signed_in


def page_url(ws: Workspace) -> str:
    return f"/p/{ws.id}/"


def switch(client: Client, ws: Workspace, value: str, **extra: Any) -> Any:
    """POST the owner's switch the way the page's form does: with the CSRF token of the page."""
    client.get(f"/w/{ws.id}/")  # the session page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    return client.post(f"/w/{ws.id}/public", {"public": value, "csrfmiddlewaretoken": token}, **extra)


def made_public(ws: Workspace) -> Workspace:
    public.workspace_publish(workspace=ws, public=True)
    return ws


def test_it_is_off_by_default_and_then_not_found(ws: Workspace, client: Client, other_user: Any, user: Any) -> None:
    assert Workspace.objects.get(pk=ws.id).public is False
    assert client.get(page_url(ws)).status_code == 404
    assert client.get(f"{page_url(ws)}f/src/app.py").status_code == 404
    for someone in (other_user, user):  # signed in changes nothing, the owner included
        client.force_login(someone)
        assert client.get(page_url(ws)).status_code == 404


def test_an_unknown_or_malformed_workspace_is_not_found(client: Client) -> None:
    assert client.get(f"/p/{uuid.uuid4()}/").status_code == 404
    assert client.get("/p/not-a-uuid/").status_code == 404


def test_the_owner_switches_it_on_with_the_csrf_token_only(ws: Workspace, owner: Client) -> None:
    refused = owner.post(f"/w/{ws.id}/public", {"public": "on"})
    assert refused.status_code == 403
    assert Workspace.objects.get(pk=ws.id).public is False
    response = switch(owner, ws, "on")
    assert response.status_code == 302
    assert response["Location"] == f"/w/{ws.id}/"
    assert Workspace.objects.get(pk=ws.id).public is True


def test_anyone_reads_the_highlighted_files_when_it_is_on(ws: Workspace, owner: Client, client: Client) -> None:
    switch(owner, ws, "on")
    response = client.get(page_url(ws))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Demo day" in page
    assert '<span class="k">def</span>' in page  # Pygments' Python lexer: a keyword token
    assert '<span class="nf">greet</span>' in page
    assert 'id="file-src/app.py"' in page and 'href="#file-src/app.py"' in page
    assert f'href="/p/{ws.id}/f/src/app.py"' in page  # each file's own page
    assert 'id="file-src/app.py-L-2"' in page  # and each line's anchor
    assert "<summary>src</summary>" in page
    # Nothing writable, no script, no style attribute (a CSP will forbid both).
    for absent in ("<form", "<script", "<textarea", " style=", "csrf"):
        assert absent not in page, absent
    assert "no-cache" in response["Cache-Control"]  # switched off, it must not live on in a cache


def test_switched_off_it_is_gone_at_once(ws: Workspace, owner: Client, client: Client) -> None:
    switch(owner, ws, "on")
    assert client.get(page_url(ws)).status_code == 200
    switch(owner, ws, "off")
    assert Workspace.objects.get(pk=ws.id).public is False
    assert client.get(page_url(ws)).status_code == 404
    assert client.get(f"{page_url(ws)}f/src/app.py").status_code == 404


def test_no_one_else_can_switch_it(ws: Workspace, other_user: Any, client: Client) -> None:
    anonymous = client.post(f"/w/{ws.id}/public", {"public": "on"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    someone = Client(enforce_csrf_checks=True)
    someone.force_login(other_user)
    mine = workspace_create(owner=other_user, name="theirs")
    someone.get(f"/w/{mine.id}/")
    token = someone.cookies["csrftoken"].value
    response = someone.post(f"/w/{ws.id}/public", {"public": "on", "csrfmiddlewaretoken": token})
    assert response.status_code == 404  # someone else's workspace is not found, not forbidden
    assert Workspace.objects.get(pk=ws.id).public is False


def test_a_collaborator_of_the_session_cannot_switch_it_either(ws: Workspace, user: Any, other_user: Any) -> None:
    session, _ = session_for_workspace(workspace=ws, by=user)
    Participant.objects.create(session=session, user=other_user, role="collaborator")
    mate = Client()
    mate.force_login(other_user)
    assert 'id="public-share"' not in mate.get(f"/sessions/{session.id}/").content.decode()
    assert mate.post(f"/w/{ws.id}/public", {"public": "on"}).status_code == 404
    assert Workspace.objects.get(pk=ws.id).public is False


def test_a_bad_switch_value_is_refused(ws: Workspace, owner: Client) -> None:
    response = switch(owner, ws, "maybe")
    assert response.status_code == 400
    assert "public must be 'on' or 'off'" in response.content.decode()
    assert Workspace.objects.get(pk=ws.id).public is False


def test_the_owners_page_shows_the_switch_and_then_the_link(ws: Workspace, owner: Client) -> None:
    page = owner.get(f"/w/{ws.id}/").content.decode()
    assert 'id="public-share"' in page and 'value="on"' in page
    assert "public-link" not in page
    response = switch(owner, ws, "on", HTTP_HX_REQUEST="true")  # htmx: the panel comes back
    panel = response.content.decode()
    assert response.status_code == 200
    assert f'value="http://testserver/p/{ws.id}/"' in panel
    assert 'data-copy="public-link"' in panel and 'value="off"' in panel
    assert " open" in panel  # it stays open after the swap


def test_a_guest_of_another_session_reads_it_too(ws: Workspace, user: Any) -> None:
    """Guests are held to the sessions they joined, except on pages open to everyone."""
    other = workspace_create(owner=user, name="other")
    session, _ = session_for_workspace(workspace=other, by=user)
    guest = Client()
    guest.force_login(session_join_as_guest(session=session, key=session.viewer_key, name="Grace"))
    assert guest.get(page_url(made_public(ws))).status_code == 200
    assert guest.get(f"/w/{ws.id}/").status_code == 403  # the rest stays closed to a guest


def test_the_rest_of_the_site_stays_closed(ws: Workspace, client: Client) -> None:
    """The public page opens itself only: the workspace, its export and its API still need
    an account (and the owner's)."""
    made_public(ws)
    assert client.get(page_url(ws)).status_code == 200
    for closed in (f"/w/{ws.id}/", f"/w/{ws.id}/export.zip", "/"):
        response = client.get(closed)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), closed
    assert client.get(f"/api/workspaces/{ws.id}").status_code == 401


def test_one_file_on_its_own_page(ws: Workspace, client: Client) -> None:
    made_public(ws)
    response = client.get(f"{page_url(ws)}f/src/app.py")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<span class="k">def</span>' in page
    assert "# Demo" not in page  # only this file; the tree links to the others
    assert f'href="/p/{ws.id}/f/README.md"' in page


@pytest.mark.parametrize(
    "path", ["missing.py", "src", "src/", "../src/app.py", "src/../README.md", "%2e%2e/README.md", "/etc/passwd"]
)
def test_a_bad_or_missing_path_is_not_found(ws: Workspace, client: Client, path: str) -> None:
    made_public(ws)
    assert client.get(f"{page_url(ws)}f/{path}").status_code == 404


def test_odd_file_names_get_safe_anchors_and_links(user: Any, client: Client) -> None:
    name = 'notes/it\'s "odd" <b>.md'
    ws = made_public(workspace_create(owner=user, name="odd", files={name: "*hi*\n"}))
    page = client.get(page_url(ws)).content.decode()
    assert "<b>" not in page
    anchor = "file-notes/it%27s%20%22odd%22%20%3Cb%3E.md"
    assert f'id="{anchor}"' in page and f'href="#{anchor}"' in page
    assert f'id="{anchor}-L-1"' in page  # Pygments' line anchors are built from it, unescaped
    link = f"/p/{ws.id}/f/notes/it's%20%22odd%22%20%3Cb%3E.md"
    assert f'href="{link}"' in html.unescape(page)
    assert client.get(link).status_code == 200


def test_an_unknown_extension_is_plain_text(user: Any, client: Client) -> None:
    ws = made_public(workspace_create(owner=user, name="w", files={"notes.zzz": "def x <tag>\n"}))
    page = client.get(page_url(ws)).content.decode()
    assert "def x &lt;tag&gt;" in page
    assert '<span class="k">' not in page


def test_a_binary_looking_file_is_named_not_shown(user: Any, client: Client) -> None:
    """A file can only be stored as UTF-8 text; one that is mostly control characters (a
    binary that happened to decode) is shown as its size."""
    blob = "\x01\x02\x03\x04\x05\x06\x07\x08" * 50
    ws = made_public(workspace_create(owner=user, name="w", files={"data.bin": blob, "a.py": "x = 1\n"}))
    page = client.get(page_url(ws)).content.decode()
    assert "binary file, 400 bytes" in page
    assert "\x01" not in page
    assert '<span class="n">x</span>' in page


def test_a_file_that_is_not_utf8_never_reaches_the_page(user: Any, client: Client) -> None:
    report = workspace_import(
        owner=user, name="upload", entries=[("logo.png", b"\x89PNG\r\n\x1a\n\xff\xfe"), ("ok.py", b"y = 2\n")]
    )
    assert [path for path, _ in report.skipped] == ["logo.png"]
    page = client.get(page_url(made_public(report.workspace))).content.decode()
    assert "logo.png" not in page and "ok.py" in page


def test_text_is_told_from_binary() -> None:
    assert not public.is_binary("print('hé')\n\ttabbed\r\n\x1b[1mbold\x1b[0m\n")
    assert public.is_binary("header\x00rest")  # git's rule: a NUL near the start
    assert public.is_binary("\udcff\udcfe")  # not encodable as UTF-8 at all
    assert public.byte_size("\udcff") == 3
    assert public.byte_size("hé") == 3


def test_files_past_the_budget_are_left_to_their_own_page(
    user: Any, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(public, "INLINE_CHARS", 20)
    big = "b = 22222222222222222\n"
    ws = made_public(workspace_create(owner=user, name="w", files={"a.py": "a = 1\n", "b.py": big}))
    page = client.get(page_url(ws)).content.decode()
    assert '<span class="n">a</span>' in page
    assert '<span class="n">b</span>' not in page
    assert f"its own page</a> ({len(big)} bytes)" in page
    assert '<span class="n">b</span>' in client.get(f"{page_url(ws)}f/b.py").content.decode()


def test_it_shows_the_stored_document_not_stale_rows(ws: Workspace, client: Client) -> None:
    """Once opened live, the document is the truth: an update the owner's process stored
    shows at once, before the file rows are refreshed from it."""
    made_public(ws)
    doc = documents.document_load(ws.id)  # as a room opening does
    before = doc.get_state()
    set_file_text(doc, "src/app.py", "def greet(name):\n    return 'hi'\n", "test")
    documents.document_append(ws.id, doc.get_update(before))
    assert "hello" in ws.files.get(path="src/app.py").text  # the rows lag behind
    page = client.get(page_url(ws)).content.decode()
    assert "<span class=\"s1\">'hi'</span>" in page and "hello" not in page


def test_a_file_written_over_http_shows(ws: Workspace, client: Client) -> None:
    made_public(ws)
    file_write(workspace=ws, path="src/new.py", data="import os\n")
    page = client.get(page_url(ws)).content.decode()
    assert 'id="file-src/new.py"' in page and '<span class="kn">import</span>' in page


def test_the_stylesheet_is_pygments_for_anyone(client: Client) -> None:
    response = client.get("/p/highlight.css")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
    css = response.content.decode()
    assert ".highlight .k " in css and ".public-grid" in css
