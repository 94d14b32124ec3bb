from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_it_refuses_anonymous_requests(client: Client) -> None:
    response = client.get("/api/workspaces")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_it_refuses_an_unknown_token(client: Client) -> None:
    response = client.get("/api/workspaces", HTTP_AUTHORIZATION="Token spk_wrong")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "bad_token"


def test_it_refuses_a_token_of_an_inactive_user(client: Client, user: Any, token: str) -> None:
    user.is_active = False
    user.save()
    assert client.get("/api/workspaces", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_it_accepts_the_session_cookie(client: Client, user: Any) -> None:
    client.force_login(user)
    assert client.get("/api/workspaces").status_code == 200


def test_cookie_writes_need_the_csrf_token(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.post("/api/workspaces", {"name": "w"}, content_type="application/json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "csrf_failed"
    browser.get("/")  # sets the CSRF cookie
    csrf = browser.cookies["csrftoken"].value
    ok = browser.post("/api/workspaces", {"name": "w"}, content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert ok.status_code == 201


def test_token_writes_need_no_csrf_token(user: Any, token: str) -> None:
    scripted = Client(enforce_csrf_checks=True)
    response = scripted.post(
        "/api/workspaces", {"name": "w"}, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert response.status_code == 201
