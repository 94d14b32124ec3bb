from __future__ import annotations

import uuid

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# Fixed ids: every pytest-xdist worker must collect the same tests.
@pytest.mark.parametrize(
    "path", ["/", "/account/tokens/", "/account/keys/", f"/w/{uuid.UUID(int=1)}/", f"/w/{uuid.UUID(int=2)}/export.zip"],
)
def test_pages_redirect_anonymous_users_to_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_the_login_page_is_public_and_signs_in(client: Client, user: object) -> None:
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "ada", "password": "correct horse 42"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_a_wrong_password_is_refused(client: Client, user: object) -> None:
    response = client.post("/login/", {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert "didn't match" in response.content.decode()
