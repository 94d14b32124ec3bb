"""Encryption at rest of people's stored provider keys (``ProviderKey.ciphertext``).

A key is encrypted with Fernet (AES-128-CBC with HMAC-SHA256, ``cryptography``). The Fernet
key is derived from ``SPARK_KEYS_SECRET``, or from Django's ``SECRET_KEY`` (``SPARK_SECRET_KEY``)
when that is unset, by HKDF-SHA256 with the fixed salt and info below: the same secret gives
the same Fernet key on every process. Secrets used before (``SPARK_KEYS_OLD_SECRETS``) still
decrypt (a ``MultiFernet``); ``manage.py spark_rotate_keys`` re-encrypts every stored key with
the current one, after which the old secrets can go (docs/security.md, "Stored provider keys").
"""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# Fixed and public: the salt keeps these Fernet keys apart from anything else ever derived from
# the same secret; changing either makes every stored key unreadable.
KDF_SALT = b"spark-ide/provider-keys/v1"
KDF_INFO = b"fernet-key"


class KeyUnreadable(Exception):
    """A stored key that none of the configured secrets decrypts (the secret changed without
    its old value in ``SPARK_KEYS_OLD_SECRETS``, or the row was altered)."""


def derive(secret: str) -> bytes:
    """The Fernet key (urlsafe base64 of 32 bytes) that ``secret`` gives."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=KDF_SALT, info=KDF_INFO)
    return base64.urlsafe_b64encode(hkdf.derive(secret.encode()))


def secrets_in_use() -> tuple[str, ...]:
    """The current secret first, then the old ones (none repeated)."""
    current = settings.SPARK_KEYS_SECRET or settings.SECRET_KEY
    ordered = [current, *settings.SPARK_KEYS_OLD_SECRETS]
    return tuple(dict.fromkeys(secret for secret in ordered if secret))


@functools.lru_cache(maxsize=4)
def _fernet(secrets: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(derive(secret)) for secret in secrets])


def fernet() -> MultiFernet:
    """Encrypts with the current secret's key, decrypts with any configured secret's."""
    return _fernet(secrets_in_use())


def encrypt(plaintext: str) -> str:
    return fernet().encrypt(plaintext.encode()).decode("ascii")


def decrypt(ciphertext: str) -> str:
    try:
        return fernet().decrypt(ciphertext.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise KeyUnreadable("no configured secret decrypts this stored key") from None


def reencrypt(ciphertext: str) -> str:
    """``ciphertext`` encrypted again with the current secret's key (``MultiFernet.rotate``)."""
    try:
        return fernet().rotate(ciphertext.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError):
        raise KeyUnreadable("no configured secret decrypts this stored key") from None
