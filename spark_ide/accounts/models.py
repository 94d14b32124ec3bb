"""API tokens, one-time login tokens, guests, and people's own provider keys. Only SHA-256
digests of tokens are stored; a provider key only encrypted (``keyring``) and its last 4."""

from __future__ import annotations

from django.conf import settings
from django.db import models

# A guest's display name: at most this many characters (after its spaces are collapsed).
GUEST_NAME_MAX = 40


class ApiToken(models.Model):
    """A per-user key for ``Authorization: Token <key>`` (scripts, CLI, editor plugins)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class LoginToken(models.Model):
    """A one-time sign-in link, like Jupyter's ``?token=`` URL printed by ``make run``."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_tokens")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)


class Guest(models.Model):
    """A user made by opening an invite link without an account: a display name, no password,
    signed in by its session cookie, with no rights but the roles its invites gave it."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="guest"
    )
    name = models.CharField(max_length=GUEST_NAME_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} (guest)"


# The providers a person may store a key for (``local``, our model server, needs none).
KEY_PROVIDERS = ("openai", "openai-compatible")


class ProviderKey(models.Model):
    """A person's own key for a provider (bring your own key): a room they own uses it for that
    provider instead of the server's. Only the Fernet ciphertext (``keyring``) and the last 4
    characters are stored; the key is never shown again, never sent to a browser."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_keys")
    provider = models.CharField(max_length=32, choices=[(name, name) for name in KEY_PROVIDERS])
    ciphertext = models.TextField()
    last4 = models.CharField(max_length=4)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "provider"], name="one_key_per_provider")]

    def __str__(self) -> str:
        return f"{self.provider} key …{self.last4} ({self.user_id})"


class KeyPreference(models.Model):
    """A person's choice for their rooms: ``own_keys_only``, never the server's key for a
    provider that needs one (a turn without a key of theirs for it is refused)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="key_preference"
    )
    own_keys_only = models.BooleanField(default=False)
