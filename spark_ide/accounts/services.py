"""Token operations: create and check API tokens, issue and redeem one-time login tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from .models import ApiToken, LoginToken


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_create(*, user: User, name: str = "") -> str:
    """Make a new API token for ``user`` and return its key (shown once, stored hashed)."""
    key = "spk_" + secrets.token_urlsafe(30)
    ApiToken.objects.create(user=user, name=name[:100], digest=_digest(key), prefix=key[:8])
    return key


def api_token_user(key: str) -> User | None:
    """The active user owning ``key``, or None."""
    if not key or len(key) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(digest=_digest(key)).first()
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user


def user_from_authorization(header: str) -> User | None:
    """Resolve an ``Authorization: Token <key>`` header value (None when absent or wrong)."""
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token":
        return None
    return api_token_user(key.strip())


def login_token_create(*, user: User) -> str:
    key = secrets.token_urlsafe(32)
    LoginToken.objects.create(
        user=user,
        digest=_digest(key),
        expires_at=timezone.now() + timedelta(seconds=settings.SPARK_LOGIN_TOKEN_TTL_S),
    )
    return key


def login_token_redeem(key: str) -> User | None:
    """Spend a login token: the user it was issued to, or None if unknown, used or expired."""
    if not key or len(key) > 200:
        return None
    with transaction.atomic():
        token = (
            LoginToken.objects.select_for_update()
            .select_related("user")
            .filter(digest=_digest(key), used_at__isnull=True, expires_at__gt=timezone.now())
            .first()
        )
        if token is None or not token.user.is_active:
            return None
        token.used_at = timezone.now()
        token.save(update_fields=["used_at"])
        return token.user


def signed_in_user(request: HttpRequest) -> User:
    """The request's user, for views that already required sign-in."""
    if not isinstance(request.user, User):
        raise PermissionDenied("sign in first")
    return request.user


def local_user_ensure(username: str = "local") -> User:
    """The embedded default's single user (no password: it signs in with the printed link)."""
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    return user
