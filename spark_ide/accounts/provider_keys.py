"""People's own provider keys (bring your own key): stored encrypted (``keyring``), listed by
their last 4 characters, deleted; read in plain text only to open a model connection.

A room uses its owner's key for its provider when the owner stored one, else the server's;
an owner who chose ``own_keys_only`` never has the server's key used for a provider that
needs one (docs/models.md, "Keys").
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet

from spark_ide.logsafe import remember_secret

from . import keyring
from .models import KEY_PROVIDERS, KeyPreference, ProviderKey
from .services import AccountError, is_guest

KEY_MIN_LENGTH = 8  # shorter, and the last 4 shown would be half of it
KEY_MAX_LENGTH = 500


@dataclass(frozen=True, slots=True)
class OwnerKey:
    """A stored key in plain text, for a connection only: never logged (its plaintext is
    remembered by ``logsafe``), never sent to a browser. ``label`` names it for people."""

    provider: str
    secret: str
    last4: str

    @property
    def label(self) -> str:
        return f"the room owner's stored {self.provider} key …{self.last4} (API keys page)"

    def __repr__(self) -> str:
        return f"OwnerKey({self.provider!r}, …{self.last4})"


def key_clean(provider: str, raw: str) -> tuple[str, str]:
    """The provider and key as typed, checked: a provider that takes keys, a key of printable
    characters without spaces (surrounding spaces are dropped) of a sensible length."""
    if provider not in KEY_PROVIDERS:
        raise AccountError("bad_provider", f"Choose a provider: {', '.join(KEY_PROVIDERS)} (local needs no key).")
    key = raw.strip()
    if not key:
        raise AccountError("key_required", "Paste the key.")
    if len(key) < KEY_MIN_LENGTH or len(key) > KEY_MAX_LENGTH:
        raise AccountError("bad_key", f"A key is {KEY_MIN_LENGTH} to {KEY_MAX_LENGTH} characters long.")
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in key):
        raise AccountError("bad_key", "A key has no spaces, line breaks or invisible characters.")
    return provider, key


def provider_key_store(*, user: User, provider: str, key: str) -> ProviderKey:
    """Store ``user``'s key for ``provider``, replacing the one stored before (a new row: the
    owner's rooms open a new connection with it). Guests may not store keys."""
    if is_guest(user):
        raise AccountError("guest_account", "A guest cannot store provider keys: sign in with an account.")
    provider, key = key_clean(provider, key)
    remember_secret(key)
    with transaction.atomic():
        ProviderKey.objects.filter(user=user, provider=provider).delete()
        return ProviderKey.objects.create(
            user=user, provider=provider, ciphertext=keyring.encrypt(key), last4=key[-4:],
        )


def provider_key_delete(*, user: User, key_id: object) -> bool:
    """Delete ``user``'s key ``key_id`` (another person's is never touched): whether one went."""
    try:
        pk = int(str(key_id))
    except ValueError:
        return False
    # Its plaintext stays masked in this process's logs (a connection may still hold it).
    deleted, _ = ProviderKey.objects.filter(user=user, pk=pk).delete()
    return deleted > 0


def provider_keys_of(user: User) -> list[ProviderKey]:
    return list(ProviderKey.objects.filter(user=user).order_by("provider"))


def own_keys_only(user_id: int) -> bool:
    return KeyPreference.objects.filter(user_id=user_id, own_keys_only=True).exists()


def own_keys_only_set(*, user: User, value: bool) -> None:
    if is_guest(user):
        raise AccountError("guest_account", "A guest cannot store provider keys: sign in with an account.")
    KeyPreference.objects.update_or_create(user=user, defaults={"own_keys_only": value})


class OwnKeyRequired(Exception):
    """The owner uses only their own keys and has none for the provider."""

    def __init__(self, provider: str) -> None:
        super().__init__(
            f"the room's owner uses only their own keys and has no {provider} key stored: "
            "add one on the API keys page, or turn off \"use my keys only\""
        )
        self.provider = provider


def user_key(user_id: int, provider: str) -> OwnerKey | None:
    """``user_id``'s key for ``provider`` in plain text (None: they stored none; the server's
    key is used). Raises ``OwnKeyRequired`` when they use only their own keys and have none
    for a provider that needs one, ``keyring.KeyUnreadable`` when the stored one cannot be read."""
    if provider not in KEY_PROVIDERS:
        return None  # the local model server: nobody's key
    row = ProviderKey.objects.filter(user_id=user_id, provider=provider).first()
    if row is None:
        if own_keys_only(user_id):
            raise OwnKeyRequired(provider)
        return None
    secret = keyring.decrypt(row.ciphertext)
    remember_secret(secret)
    return OwnerKey(provider=provider, secret=secret, last4=row.last4)


def keys_stamp(owner: QuerySet[User]) -> str:
    """Changes whenever the person ``owner`` selects adds, replaces or deletes a key or
    changes their choice: a room compares it before each turn and opens a new connection when
    it changed. One query (it is read before every turn)."""
    rows = list(owner.values_list("provider_keys__pk", "key_preference__own_keys_only"))
    keys = sorted({pk for pk, _ in rows if pk is not None})
    return f"{','.join(map(str, keys))}|{int(any(only for _, only in rows))}"
