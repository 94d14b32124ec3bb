"""People's own provider keys (issue 34, bring your own key): stored encrypted, listed by their
last 4 characters, deleted by their owner only, refused to guests, rotated to a new secret, and
masked in every log record the server writes."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from spark_ide.accounts import keyring
from spark_ide.accounts.models import KeyPreference, ProviderKey
from spark_ide.accounts.provider_keys import (
    OwnKeyRequired,
    keys_stamp,
    own_keys_only_set,
    provider_key_store,
    user_key,
)
from spark_ide.accounts.services import AccountError, guest_create

pytestmark = pytest.mark.django_db

KEY = "sk-proj-Plaintext0123456789abcdefWXYZ"  # its last 4: WXYZ
OTHER = "sk-other-0123456789-9876"
PAGE = "/account/keys/"


def database_dump() -> str:
    """Every row of every table, as text."""
    rows: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(rows)


def test_a_stored_key_is_only_ciphertext_and_its_last_4(user: Any) -> None:
    provider_key_store(user=user, provider="openai", key=f"  {KEY}\n")
    row = ProviderKey.objects.get()
    assert (row.provider, row.last4) == ("openai", "WXYZ")
    dump = database_dump()
    assert KEY not in dump and KEY[:-4] not in dump
    assert row.ciphertext in dump
    assert keyring.decrypt(row.ciphertext) == KEY
    found = user_key(user.pk, "openai")
    assert found is not None and found.secret == KEY
    assert KEY not in repr(found) and "WXYZ" in found.label


def test_the_fernet_key_is_derived_from_the_keys_secret_by_hkdf(settings: Any, user: Any) -> None:
    settings.SPARK_KEYS_SECRET = ""
    from_django = keyring.derive(settings.SECRET_KEY)
    assert keyring.fernet().decrypt(keyring.fernet().encrypt(b"x")) == b"x"
    assert keyring.derive(settings.SECRET_KEY) == from_django  # fixed salt and info: the same every time
    settings.SPARK_KEYS_SECRET = "k" * 40
    assert keyring.derive("k" * 40) != from_django
    provider_key_store(user=user, provider="openai", key=KEY)
    settings.SPARK_KEYS_SECRET = "n" * 40  # the secret changed and the old one is not given
    with pytest.raises(keyring.KeyUnreadable):
        user_key(user.pk, "openai")


def test_rotation_re_encrypts_every_key_with_the_new_secret(settings: Any, user: Any, other_user: Any) -> None:
    old, new = "o" * 40, "n" * 40
    settings.SPARK_KEYS_SECRET, settings.SPARK_KEYS_OLD_SECRETS = old, []
    provider_key_store(user=user, provider="openai", key=KEY)
    provider_key_store(user=other_user, provider="openai-compatible", key=OTHER)
    before = dict(ProviderKey.objects.values_list("pk", "ciphertext"))
    settings.SPARK_KEYS_SECRET, settings.SPARK_KEYS_OLD_SECRETS = new, [old]
    assert user_key(user.pk, "openai").secret == KEY  # type: ignore[union-attr]  # read with the old secret
    out = io.StringIO()
    call_command("spark_rotate_keys", stdout=out)
    assert "re-encrypted 2 stored key(s)" in out.getvalue()
    after = dict(ProviderKey.objects.values_list("pk", "ciphertext"))
    assert all(after[pk] != before[pk] for pk in before)
    settings.SPARK_KEYS_OLD_SECRETS = []  # the old secret can go now
    assert user_key(user.pk, "openai").secret == KEY  # type: ignore[union-attr]
    assert user_key(other_user.pk, "openai-compatible").secret == OTHER  # type: ignore[union-attr]


def test_rotation_names_the_keys_no_secret_reads(settings: Any, user: Any) -> None:
    settings.SPARK_KEYS_SECRET = "o" * 40
    provider_key_store(user=user, provider="openai", key=KEY)
    settings.SPARK_KEYS_SECRET = "n" * 40
    with pytest.raises(CommandError, match=r"1 stored key\(s\) no configured secret decrypts: #\d+ \(openai …WXYZ"):
        call_command("spark_rotate_keys", stdout=io.StringIO())


@pytest.mark.parametrize(("provider", "key", "code"), [
    ("anthropic", KEY, "bad_provider"), ("local", KEY, "bad_provider"), ("openai", "  ", "key_required"),
    ("openai", "sk-1", "bad_key"), ("openai", "sk-with space-123", "bad_key"), ("openai", "x" * 501, "bad_key"),
    ("openai", "sk-zero\u200bwidth", "bad_key"),
])
def test_bad_keys_have_named_errors(user: Any, provider: str, key: str, code: str) -> None:
    with pytest.raises(AccountError) as refused:
        provider_key_store(user=user, provider=provider, key=key)
    assert refused.value.code == code and refused.value.message
    assert not ProviderKey.objects.exists()


def test_a_guest_may_not_store_keys() -> None:
    guest = guest_create("Visitor")
    with pytest.raises(AccountError, match="guest cannot store provider keys"):
        provider_key_store(user=guest, provider="openai", key=KEY)
    client = Client()
    client.force_login(guest)
    page = client.post(PAGE, {"provider": "openai", "key": KEY})
    assert page.status_code == 403 and "guest" in page.content.decode().lower()
    assert not ProviderKey.objects.exists()


def test_the_page_adds_lists_and_deletes_never_showing_the_key(client: Client, user: Any) -> None:
    client.force_login(user)
    page = client.post(PAGE, {"provider": "openai", "key": KEY})
    shown = page.content.decode()
    assert page.status_code == 200 and "Stored your openai key …WXYZ" in shown
    listed = client.get(PAGE).content.decode()
    assert '<tr data-provider="openai"><td>openai</td><td><code>…WXYZ</code></td>' in listed
    for text in (shown, listed):
        assert KEY not in text and KEY[:-4] not in text
    refused = client.post(PAGE, {"provider": "openai", "key": KEY + " tail"}).content.decode()
    assert 'data-code="bad_key"' in refused and KEY not in refused  # a refused key is not put back in the form
    client.post(PAGE, {"delete": ProviderKey.objects.get().pk})
    assert not ProviderKey.objects.exists()
    assert "No keys: your rooms use the server's." in client.get(PAGE).content.decode()


def test_another_user_cannot_delete_or_see_your_key(client: Client, user: Any, other_user: Any) -> None:
    mine = provider_key_store(user=user, provider="openai", key=KEY)
    client.force_login(other_user)
    page = client.post(PAGE, {"delete": mine.pk})
    assert page.status_code == 200 and "WXYZ" not in page.content.decode()
    assert ProviderKey.objects.filter(pk=mine.pk).exists()
    assert client.post(PAGE, {"delete": "not-a-number"}).status_code == 200


def stamp(user: Any) -> str:
    return keys_stamp(User.objects.filter(pk=user.pk))


def test_storing_again_replaces_the_key_and_changes_the_stamp(user: Any) -> None:
    provider_key_store(user=user, provider="openai", key=KEY)
    first = stamp(user)
    provider_key_store(user=user, provider="openai", key=OTHER)
    assert ProviderKey.objects.get().last4 == "9876"
    assert stamp(user) != first
    again = stamp(user)
    own_keys_only_set(user=user, value=True)
    assert stamp(user) != again


def test_use_my_keys_only_refuses_a_provider_without_a_key(client: Client, user: Any) -> None:
    client.force_login(user)
    assert user_key(user.pk, "openai") is None  # no key: the server's is used
    page = client.post(PAGE, {"own_keys_only": "on"})
    assert "only your keys" in page.content.decode()
    assert "your rooms use the server's" not in page.content.decode()  # the empty table says so too
    assert KeyPreference.objects.get(user=user).own_keys_only
    with pytest.raises(OwnKeyRequired, match="no openai key stored"):
        user_key(user.pk, "openai")
    assert user_key(user.pk, "local") is None  # the local model server needs nobody's key
    client.post(PAGE, {"own_keys_only": "off"})
    assert user_key(user.pk, "openai") is None


def test_the_servers_log_masks_a_stored_key(user: Any) -> None:
    """The console handler the settings configure (every record the server writes) carries the
    redaction filter: a stored key that reaches a message or a traceback is masked."""
    provider_key_store(user=user, provider="openai", key=KEY)
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "name", "") == "console")
    stream = io.StringIO()
    previous = handler.setStream(stream)  # type: ignore[attr-defined]
    try:
        log = logging.getLogger("spark_ide.tests.keys")
        log.warning("connecting with %s", KEY)
        try:
            raise RuntimeError(f"upstream said: bad key {KEY}")
        except RuntimeError:
            log.exception("it failed")
    finally:
        handler.setStream(previous)  # type: ignore[attr-defined]
    written = stream.getvalue()
    assert "connecting with ***" in written and "bad key ***" in written
    assert KEY not in written
