"""Joining by an invite link without an account: a guest with a name and the invite's role, and
nothing more; the owner's people list, removing someone, and new invite links."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.accounts.models import Guest
from spark_ide.pairing.models import Participant, Session
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user: Any) -> Session:
    return session_create(workspace=workspace_create(owner=user, name="shared", files={"a.py": "x = 1\n"}), by=user)


def invite(session: Session, role: str) -> str:
    return f"/sessions/{session.id}/join/{getattr(session, f'{role}_key')}"


def join_as_guest(session: Session, role: str, name: str = "Grace") -> Client:
    """A fresh browser (no account) that opens the link and gives a name."""
    guest = Client()
    response = guest.post(invite(session, role), {"name": name})
    assert response.status_code == 302, response.content.decode()
    assert response["Location"] == f"/sessions/{session.id}/"
    return guest


def guest_user(name: str = "Grace") -> User:
    return Guest.objects.select_related("user").get(name=name).user


def owner_client(user: Any) -> Client:
    owner = Client()
    owner.force_login(user)
    return owner


def test_an_invite_opened_signed_out_asks_for_a_name_and_nothing_else(session: Session) -> None:
    page = Client().get(invite(session, "collaborator"))
    assert page.status_code == 200
    html = page.content.decode()
    assert re.findall(r'<input[^>]*name="([^"]+)"', html) == ["csrfmiddlewaretoken", "name"]
    assert "collaborator" in html and "shared" in html
    assert not User.objects.filter(guest__isnull=False).exists()  # opening the link makes nobody


@pytest.mark.parametrize("role", ["viewer", "collaborator"])
def test_a_name_makes_a_signed_in_guest_holding_the_invites_role(session: Session, role: str) -> None:
    guest = join_as_guest(session, role, name="  Grace   Hopper ")
    user = guest_user("Grace Hopper")
    assert user.username == "Grace Hopper (guest)"
    assert not user.has_usable_password()
    assert Participant.objects.get(session=session, user=user).role == role
    page = guest.get(f"/sessions/{session.id}/")
    assert page.status_code == 200
    assert (page.context["role"], page.context["can_drive"]) == (role, role == "collaborator")
    assert page.context["invites"] is None and page.context["members_url"] is None  # the owner's tools


def test_the_same_name_twice_makes_two_guests(session: Session) -> None:
    join_as_guest(session, "viewer", name="Sam")
    join_as_guest(session, "viewer", name="Sam")
    names = sorted(Guest.objects.filter(name="Sam").values_list("user__username", flat=True))
    assert names == ["Sam (guest 2)", "Sam (guest)"]


@pytest.mark.parametrize(
    ("name", "code"),
    [("", "name_required"), ("   \t ", "name_required"), ("x" * 41, "name_too_long"),
     ("a\x00b", "bad_name"), ("\u200b", "bad_name")],
)
def test_a_bad_name_is_refused_on_the_form(session: Session, name: str, code: str) -> None:
    browser = Client()
    response = browser.post(invite(session, "viewer"), {"name": name})
    assert response.status_code == 400
    assert response.context["error"].code == code
    html = response.content.decode()
    assert f'data-code="{code}"' in html and response.context["error"].message in html
    assert not Guest.objects.exists()
    assert "_auth_user_id" not in browser.session


def test_forty_characters_are_enough(session: Session) -> None:
    join_as_guest(session, "viewer", name="y" * 40)
    assert Guest.objects.get().name == "y" * 40


@pytest.mark.parametrize("signed_in", [False, True])
def test_a_bad_invite_link_says_so_on_a_page(session: Session, other_user: Any, signed_in: bool) -> None:
    browser = Client()
    if signed_in:
        browser.force_login(other_user)
    for url in (f"/sessions/{session.id}/join/nope", f"/sessions/not-a-session/join/{session.viewer_key}"):
        response = browser.get(url)
        assert response.status_code == 404
        assert "This invite link does not work" in response.content.decode()
    response = browser.post(f"/sessions/{session.id}/join/nope", {"name": "Eve"})
    assert response.status_code == 404
    assert not Guest.objects.exists()
    assert not Participant.objects.filter(user=other_user).exists()


def test_a_signed_in_user_joins_with_their_account(session: Session, other_user: Any) -> None:
    browser = owner_client(other_user)
    asked = browser.get(invite(session, "viewer"))  # no name to give: the page only asks
    assert asked.status_code == 200 and "Your name" not in asked.content.decode()
    response = browser.post(invite(session, "viewer"))
    assert response["Location"] == f"/sessions/{session.id}/"
    assert Participant.objects.get(session=session, user=other_user).role == "viewer"
    assert not Guest.objects.exists()


def test_a_guest_sees_only_its_session(session: Session, user: Any) -> None:
    guest = join_as_guest(session, "collaborator")
    elsewhere = workspace_create(owner=user, name="private", files={"secret.py": "k = 1\n"})
    other_session = session_create(workspace=elsewhere, by=user)

    assert guest.get("/")["Location"] == "/sessions/"  # the workspace list: where a sign-in lands
    assert guest.get("/sessions/")["Location"] == f"/sessions/{session.id}/"
    assert guest.get(f"/sessions/{other_session.id}/").status_code == 404  # as for one that does not exist
    missing = guest.get("/sessions/00000000-0000-0000-0000-000000000000/")
    pages = (missing, guest.get(f"/sessions/{other_session.id}/"))
    same = [re.search(rb'<section class="card narrow" id="no-access">.*?</section>', p.content, re.S) for p in pages]
    assert missing.status_code == 404 and same[0] and same[1] and same[0][0] == same[1][0]  # the same page
    for path in (f"/w/{elsewhere.id}/", "/account/tokens/"):
        response = guest.get(path)
        assert response.status_code == 403
        assert "Not open to guests" in response.content.decode()
    # Open to guests (a guest student owns their copy of a course), someone else's: not found.
    for path in (f"/w/{elsewhere.id}/export.zip", f"/w/{elsewhere.id}/guard"):
        assert guest.get(path).status_code == 404
    assert guest.post("/workspaces/new", {"name": "mine"}).status_code == 403
    api = guest.get("/api/workspaces")
    assert (api.status_code, api.json()["error"]["code"]) == (403, "guest_forbidden")
    assert guest.post("/api/workspaces", {"name": "mine"}, content_type="application/json").status_code == 403
    assert guest.get(f"/api/workspaces/{elsewhere.id}/files/secret.py").status_code == 403
    assert guest.get(f"/api/sessions/{other_session.id}/turns").status_code == 404
    assert Workspace.objects.filter(name="mine").count() == 0

    assert guest.get(f"/api/sessions/{session.id}/turns").status_code == 200
    assert guest.get(f"/sessions/{session.id}/history").status_code == 200
    page = guest.get(f"/sessions/{session.id}/").content.decode()
    assert "API tokens" not in page  # no link to what a guest may not use
    tree = f"/sessions/{session.id}/tree"
    assert guest.post(tree, {"action": "create", "path": "b.py"}).status_code == 200  # a collaborator edits
    assert session.workspace.files.filter(path="b.py").exists()
    assert guest.get("/login/")["Location"] == "/"
    guest.post("/logout/")
    assert guest.get(f"/sessions/{session.id}/").status_code == 302  # signed out: to the login page


def test_a_guest_viewer_cannot_change_files(session: Session) -> None:
    guest = join_as_guest(session, "viewer")
    response = guest.post(f"/sessions/{session.id}/tree", {"action": "delete", "path": "a.py"})
    assert response.status_code == 403
    assert session.workspace.files.filter(path="a.py").exists()


def test_the_owner_lists_people_with_guests_marked(session: Session, user: Any, other_user: Any) -> None:
    join_as_guest(session, "viewer", name="Grace")
    owner_client(other_user).post(invite(session, "collaborator"))
    owner = owner_client(user)
    page = owner.get(f"/sessions/{session.id}/")
    assert page.context["members_url"] == f"/sessions/{session.id}/members"
    assert 'id="members"' in page.content.decode()
    listing = owner.get(f"/sessions/{session.id}/members")
    rows = [(m.name, m.role, m.guest, m.removable) for m in listing.context["members"]]
    assert rows == [
        ("ada", "owner", False, False), ("Grace", "viewer", True, True), ("bob", "collaborator", False, True),
    ]
    html = listing.content.decode()
    assert html.count(">Remove</button>") == 2
    assert html.count('class="badge guest"') == 1


def test_only_the_owner_sees_and_changes_people(session: Session, other_user: Any) -> None:
    mate = owner_client(other_user)
    mate.post(invite(session, "collaborator"))
    assert mate.get(f"/sessions/{session.id}/members").status_code == 404
    assert mate.post(f"/sessions/{session.id}/invites", {"role": "viewer"}).status_code == 404
    guest = join_as_guest(session, "collaborator")
    assert guest.get(f"/sessions/{session.id}/members").status_code == 404
    assert guest.post(f"/sessions/{session.id}/members", {"remove": str(other_user.pk)}).status_code == 404
    assert guest.post(f"/sessions/{session.id}/invites", {"role": "viewer"}).status_code == 404
    assert Participant.objects.filter(session=session, user=other_user).exists()


def test_a_removed_guest_who_reloads_is_told_it_has_no_access(session: Session, user: Any) -> None:
    guest = join_as_guest(session, "collaborator")
    grace = guest_user()
    listing = owner_client(user).post(f"/sessions/{session.id}/members", {"remove": str(grace.pk)})
    assert listing.status_code == 200
    assert [m.name for m in listing.context["members"]] == ["ada"]
    assert not Participant.objects.filter(user=grace).exists()
    for path in (f"/sessions/{session.id}/", "/sessions/", "/"):
        page = guest.get(path, follow=True)
        assert page.status_code == 404
        assert "You no longer have access" in page.content.decode()
    assert guest.get(f"/api/sessions/{session.id}/turns").status_code == 404


def test_a_removed_person_cannot_come_back_through_the_links_of_the_moment(
    session: Session, user: Any, other_user: Any
) -> None:
    """Removal bars the session's invite links of that moment for that person (both roles, GET
    and POST, an account or a signed-in guest); a new link, or Let back in, lets them in again."""
    mate = owner_client(other_user)
    assert mate.post(invite(session, "viewer")).status_code == 302
    guest = join_as_guest(session, "collaborator")
    owner = owner_client(user)
    for person in (other_user, guest_user()):
        assert owner.post(f"/sessions/{session.id}/members", {"remove": str(person.pk)}).status_code == 200
    listing = owner.get(f"/sessions/{session.id}/members")
    assert [m.name for m in listing.context["removed"]] == ["Grace", "bob"]
    assert listing.content.decode().count(">Let back in</button>") == 2
    for client in (mate, guest):
        for role in ("viewer", "collaborator"):
            for method in (client.get, client.post):
                page = method(invite(session, role))
                assert page.status_code == 404, (role, page.status_code)
                assert "removed you from this session" in page.content.decode()
    assert not Participant.objects.filter(user__in=[other_user, guest_user()]).exists()
    assert Participant.objects.filter(session=session).count() == 1  # the owner; nobody else joined

    # A new collaborator link lets the removed account in (the owner chose to share it again);
    # the old viewer link still does not.
    owner.post(f"/sessions/{session.id}/invites", {"role": "collaborator"})
    session.refresh_from_db()
    assert mate.post(invite(session, "viewer")).status_code == 404
    assert mate.post(invite(session, "collaborator")).status_code == 302
    assert Participant.objects.get(session=session, user=other_user).role == "collaborator"

    # Let back in: the guest's old links... its collaborator link was just replaced; the viewer
    # link of the moment works for it again.
    listing = owner.post(f"/sessions/{session.id}/members", {"allow": str(guest_user().pk)})
    assert listing.status_code == 200 and "Grace" not in [m.name for m in listing.context["removed"]]
    assert guest.post(invite(session, "viewer")).status_code == 302
    assert Participant.objects.get(session=session, user=guest_user()).role == "viewer"
    missing = owner.post(f"/sessions/{session.id}/members", {"allow": str(guest_user().pk)})
    assert missing.context["error"].code == "not_found"


@pytest.mark.parametrize(
    ("remove", "code"), [("", "bad_member"), ("x", "bad_member"), ("999999", "not_found"), ("owner", "not_removable")]
)
def test_removing_someone_who_cannot_be_removed_says_why(session: Session, user: Any, remove: str, code: str) -> None:
    owner = owner_client(user)
    response = owner.post(f"/sessions/{session.id}/members", {"remove": str(user.pk) if remove == "owner" else remove})
    assert response.status_code == 200  # a partial htmx swaps in, with the reason
    assert response.context["error"].code == code
    assert f'data-code="{code}"' in response.content.decode()
    assert Participant.objects.filter(session=session, user=user).exists()


def test_a_new_link_revokes_the_guests_who_came_through_the_old_one(
    session: Session, user: Any, other_user: Any
) -> None:
    old_viewer, old_collaborator = invite(session, "viewer"), invite(session, "collaborator")
    viewer = join_as_guest(session, "viewer", name="Vic")
    collaborator = join_as_guest(session, "collaborator", name="Cole")
    owner_client(other_user).post(old_viewer)  # an account, not a guest: stays
    owner = owner_client(user)
    response = owner.post(f"/sessions/{session.id}/invites", {"role": "viewer"})
    assert response.status_code == 200
    assert "spark:members-changed" in response["HX-Trigger"]
    session.refresh_from_db()
    assert invite(session, "viewer") != old_viewer and invite(session, "collaborator") == old_collaborator
    assert response.context["invites"]["viewer"].endswith(invite(session, "viewer"))
    assert not Participant.objects.filter(user=guest_user("Vic")).exists()
    assert Participant.objects.filter(user=guest_user("Cole")).exists()
    assert Participant.objects.filter(user=other_user).exists()
    assert viewer.get(f"/sessions/{session.id}/").status_code == 404
    assert collaborator.get(f"/sessions/{session.id}/").status_code == 200
    assert Client().get(old_viewer).status_code == 404  # the old link is dead
    assert Client().get(invite(session, "viewer")).status_code == 200  # the new one asks for a name


def test_a_new_link_for_no_such_role_is_refused(session: Session, user: Any) -> None:
    keys = (session.viewer_key, session.collaborator_key)
    response = owner_client(user).post(f"/sessions/{session.id}/invites", {"role": "owner"})
    assert response.context["error"].code == "bad_role"
    session.refresh_from_db()
    assert (session.viewer_key, session.collaborator_key) == keys


def test_a_link_replaced_while_the_name_form_was_open_makes_no_guest(session: Session, user: Any) -> None:
    browser = Client()
    assert browser.get(invite(session, "collaborator")).status_code == 200
    stale = invite(session, "collaborator")
    owner_client(user).post(f"/sessions/{session.id}/invites", {"role": "collaborator"})
    assert browser.post(stale, {"name": "Late"}).status_code == 404
    assert not Guest.objects.exists()
