"""Guest accounts: a display name, a username no printed link clashes with, no password, no tokens."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from spark_ide.accounts.models import GUEST_NAME_MAX, ApiToken
from spark_ide.accounts.services import AccountError, api_token_create, guest_create, is_guest

pytestmark = pytest.mark.django_db


def test_a_guest_is_a_real_user_without_a_password() -> None:
    user = guest_create("  Ada\tLovelace  ")
    assert (user.username, user.first_name, user.guest.name) == ("Ada Lovelace (guest)", "Ada Lovelace", "Ada Lovelace")
    assert user.is_active and not user.has_usable_password()
    assert is_guest(user)


def test_usernames_stay_unique_and_apart_from_accounts(user: Any) -> None:
    names = [guest_create(name).username for name in ("ada", "ada", "ada", "Ada")]
    assert names == ["ada (guest)", "ada (guest 2)", "ada (guest 3)", "Ada (guest)"]
    assert User.objects.get(username="ada") == user  # the account named ada is untouched
    assert not is_guest(user)


@pytest.mark.parametrize(
    ("name", "code"),
    [("", "name_required"), (" \n ", "name_required"), ("n" * (GUEST_NAME_MAX + 1), "name_too_long"),
     ("tab\x07bell", "bad_name"), ("zero\u200bwidth", "bad_name")],
)
def test_bad_names_have_named_errors(name: str, code: str) -> None:
    with pytest.raises(AccountError) as refused:
        guest_create(name)
    assert refused.value.code == code
    assert refused.value.message
    assert not User.objects.exists()


def test_a_name_may_be_any_script() -> None:
    assert guest_create("Zoë 李").username == "Zoë 李 (guest)"


def test_guests_get_no_api_token() -> None:
    guest = guest_create("Grace")
    with pytest.raises(AccountError) as refused:
        api_token_create(user=guest)
    assert refused.value.code == "guest_account"
    assert not ApiToken.objects.exists()
