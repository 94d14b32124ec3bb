from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from spark_ide.accounts.models import LoginToken
from spark_ide.accounts.services import login_token_create

pytestmark = pytest.mark.django_db


def test_the_token_link_signs_in_and_drops_the_token_from_the_url(client: Client, user: Any) -> None:
    key = login_token_create(user=user)
    response = client.get(f"/?token={key}&x=1")
    assert response.status_code == 302
    assert response["Location"] == "/?x=1"
    assert client.get("/").status_code == 200
    assert int(client.session["_auth_user_id"]) == user.pk


def test_a_token_works_once(user: Any) -> None:
    key = login_token_create(user=user)
    first, second = Client(), Client()
    first.get(f"/?token={key}")
    second.get(f"/?token={key}")
    assert "_auth_user_id" in first.session
    assert "_auth_user_id" not in second.session


def test_an_expired_token_does_not_sign_in(client: Client, user: Any) -> None:
    key = login_token_create(user=user)
    LoginToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client.get(f"/?token={key}")
    assert client.get("/").status_code == 302  # to the login page


def test_a_wrong_token_does_not_sign_in(client: Client) -> None:
    response = client.get("/?token=nope")
    assert response.status_code == 302
    assert client.get("/")["Location"].startswith("/login/")


@pytest.mark.parametrize(
    ("spoil", "problem", "says"),
    [
        ("use", "used", "This sign-in link was already used"),
        ("expire", "expired", "This sign-in link has expired"),
        ("mangle", "unknown", "This sign-in link is not valid"),
    ],
)
def test_the_login_page_says_why_a_link_did_not_sign_in(
    client: Client, user: Any, spoil: str, problem: str, says: str
) -> None:
    key = login_token_create(user=user)
    if spoil == "use":
        Client().get(f"/?token={key}")
    elif spoil == "expire":
        LoginToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    else:
        key = key[:-2]
    response = client.get(f"/w/some/?token={key}&tab=a.py")
    assert response["Location"] == f"/login/?link={problem}&next=%2Fw%2Fsome%2F%3Ftab%3Da.py"
    page = client.get(response["Location"])
    html = page.content.decode()
    assert says in html
    assert 'name="next" value="/w/some/?tab=a.py"' in html  # signing in by hand still goes there
    assert "_auth_user_id" not in client.session


def test_a_signed_in_user_with_a_spent_link_just_goes_on(client: Client, user: Any) -> None:
    key = login_token_create(user=user)
    client.get(f"/?token={key}")
    response = client.get(f"/?token={key}&x=1")
    assert response["Location"] == "/?x=1"
    assert int(client.session["_auth_user_id"]) == user.pk


def test_the_login_page_ignores_an_unknown_reason(client: Client) -> None:
    page = client.get("/login/?link=<script>")
    assert page.context["link_problem"] == ""
    assert "<script>" not in page.content.decode()


def test_the_command_prints_a_working_url(client: Client) -> None:
    out = StringIO()
    call_command("spark_login_url", "teacher", "--base", "http://ide.test:8000", stdout=out)
    url = out.getvalue().strip()
    assert url.startswith("http://ide.test:8000/?token=")
    client.get(url.removeprefix("http://ide.test:8000"))
    assert client.get("/").status_code == 200


def test_only_the_hash_is_stored(user: Any) -> None:
    key = login_token_create(user=user)
    assert not LoginToken.objects.filter(digest=key).exists()
    assert key not in LoginToken.objects.get().digest
