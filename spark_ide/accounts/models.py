"""API tokens, one-time login tokens and guests. Only SHA-256 digests of keys are stored."""

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
