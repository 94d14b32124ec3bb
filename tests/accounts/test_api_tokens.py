from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from spark_ide.accounts.models import ApiToken
from spark_ide.accounts.services import TOKEN_USE_RECORDED_EVERY, api_token_create, api_token_user

pytestmark = pytest.mark.django_db


def test_spark_token_prints_a_key_that_authenticates(client: Client, user: Any) -> None:
    out = StringIO()
    call_command("spark_token", user.username, stdout=out)
    key = out.getvalue().strip()
    assert key.startswith("spk_")
    assert client.get("/api/workspaces", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_spark_token_rejects_an_unknown_user() -> None:
    with pytest.raises(CommandError, match="no such user"):
        call_command("spark_token", "ghost")


def test_the_ui_creates_shows_once_and_revokes_a_token(client: Client, user: Any) -> None:
    client.force_login(user)
    page = client.post("/account/tokens/", {"name": "laptop"})
    key = page.context["new_key"]
    assert key in page.content.decode()
    assert key not in client.get("/account/tokens/").content.decode()
    assert client.get("/api/workspaces", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    client.post("/account/tokens/", {"delete": ApiToken.objects.get().pk})
    assert client.get("/api/workspaces", HTTP_AUTHORIZATION=f"Token {key}", follow=False).status_code == 401


def test_a_tokens_last_use_is_written_at_most_once_a_minute(user: Any, django_assert_num_queries: Any) -> None:
    """Each socket a script opens authenticates with its token: a write per use would queue
    behind the rooms' writes (SQLite has one writer). The tokens page shows it to the minute."""
    key = api_token_create(user=user, name="script")
    assert api_token_user(key) == user
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    with django_assert_num_queries(1):  # the lookup only
        assert api_token_user(key) == user
    ApiToken.objects.update(last_used_at=first - TOKEN_USE_RECORDED_EVERY)
    assert api_token_user(key) == user
    again = ApiToken.objects.get().last_used_at
    assert again is not None and again > first  # a minute later it is written again


def test_a_tokens_holder_is_the_user_as_the_orm_gives_them(user: Any, django_user_model: Any) -> None:
    """One statement reads the token and its user's flags; what it leaves out loads when asked
    for, as a deferred field does. An inactive user's token, or no such token: nobody."""
    user.email, user.is_staff = "ada@example.org", True
    user.save()
    key = api_token_create(user=user, name="script")
    found = api_token_user(key)
    assert found is not None and found.pk == user.pk and found.get_username() == user.username
    assert (found.is_active, found.is_staff, found.is_superuser) == (True, True, False)  # bools, not 1 and 0
    assert "email" in found.get_deferred_fields() and found.email == "ada@example.org"
    assert api_token_user(key + "x") is None and api_token_user("") is None and api_token_user("k" * 201) is None
    django_user_model.objects.filter(pk=user.pk).update(is_active=False)
    assert api_token_user(key) is None
