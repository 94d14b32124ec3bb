"""Accounts: API tokens, one-time login tokens (and why one no longer works), guests."""

from __future__ import annotations

import functools
import hashlib
import secrets
import unicodedata
from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, connection, transaction
from django.db.models import BooleanField
from django.http import HttpRequest
from django.utils import timezone

from .models import GUEST_NAME_MAX, ApiToken, Guest, LoginToken


class AccountError(Exception):
    """A refused account operation; ``code`` is stable (forms and tests name it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def sha256_hex(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8), in hex: what is stored of a token, an invite key, a
    template file's text."""
    return hashlib.sha256(text.encode()).hexdigest()


def api_token_create(*, user: User, name: str = "") -> str:
    """Make a new API token for ``user`` and return its key (shown once, stored hashed).
    Guests get none: their cookie is their only way in."""
    if is_guest(user):
        raise AccountError("guest_account", f"{user.get_username()!r} is a guest: guests have no API tokens")
    key = "spk_" + secrets.token_urlsafe(30)
    ApiToken.objects.create(user=user, name=name[:100], digest=sha256_hex(key), prefix=key[:8])
    return key


TOKEN_USE_RECORDED_EVERY = timedelta(seconds=60)


def api_token_user(key: str) -> User | None:
    """The active user owning ``key``, or None."""
    if not key or len(key) > 200:
        return None
    now = timezone.now()
    # One statement, not the ORM's select_related query (0.4 ms of building it, ten times the
    # read: a script's or a storm's every socket makes one). The user comes with the fields a
    # request or a socket reads; any other is loaded if asked for (a deferred field).
    sql, names, flags = _token_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [connection.ops.adapt_datetimefield_value(now - TOKEN_USE_RECORDED_EVERY), sha256_hex(key)])
        found = cursor.fetchone()
    if found is None:
        return None
    token_id, stale, *values = found
    # SQLite answers 1 for True: the flags as the ORM would give them.
    values = [bool(value) if flag else value for flag, value in zip(flags, values, strict=True)]
    user = User.from_db(connection.alias, names, values)
    if not user.is_active:
        return None
    if stale:
        # Shown to the minute on the tokens page: a write per use would put one on the database
        # for every socket a script opens (and SQLite has one writer, the rooms' too).
        ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
    return user


# The user's fields a token's holder comes with (``api_token_user``): the rest are deferred.
TOKEN_USER_FIELDS = frozenset({"id", "username", "first_name", "is_active", "is_staff", "is_superuser"})


@functools.cache
def _token_sql() -> tuple[str, tuple[str, ...], tuple[bool, ...]]:
    """``api_token_user``'s statement, named from the models, the user's fields it reads
    (``TOKEN_USER_FIELDS`` in the model's order, as ``Model.from_db`` takes them), and which of
    them are flags: the token's id, whether its last use is no later than the first parameter
    (or none), those fields."""
    quote = connection.ops.quote_name
    token, user = ApiToken._meta, User._meta
    read = [field for field in user.concrete_fields if field.attname in TOKEN_USER_FIELDS]
    names = tuple(field.attname for field in read)
    flags = tuple(isinstance(field, BooleanField) for field in read)
    used = quote(token.get_field("last_used_at").column)
    fields = ", ".join(f"u.{quote(field.column)}" for field in read)
    joined = f"{quote(user.db_table)} u ON u.{quote(user.pk.column)} = t.{quote(token.get_field('user').column)}"
    sql = (
        f"SELECT t.{quote(token.pk.column)}, CASE WHEN t.{used} IS NULL OR t.{used} <= %s THEN 1 ELSE 0 END, "  # noqa: S608
        f"{fields} FROM {quote(token.db_table)} t JOIN {joined} WHERE t.{quote(token.get_field('digest').column)} = %s"
    )
    return sql, names, flags


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
        digest=sha256_hex(key),
        expires_at=timezone.now() + timedelta(seconds=settings.SPARK_LOGIN_TOKEN_TTL_S),
    )
    return key


class LoginLinkProblem(StrEnum):
    """Why a sign-in link did not sign anyone in (the login page says so)."""

    USED = "used"
    EXPIRED = "expired"
    UNKNOWN = "unknown"


LOGIN_LINK_MESSAGES: dict[str, str] = {  # by LoginLinkProblem
    LoginLinkProblem.USED: "This sign-in link was already used: each link works once. "
    "Run `manage.py spark_login_url` for a new one.",
    LoginLinkProblem.EXPIRED: "This sign-in link has expired. Run `manage.py spark_login_url` for a new one.",
    LoginLinkProblem.UNKNOWN: "This sign-in link is not valid. Check that it was copied whole.",
}


class LoginLinkRefused(Exception):
    def __init__(self, problem: LoginLinkProblem) -> None:
        super().__init__(LOGIN_LINK_MESSAGES[problem])
        self.problem = problem


def login_token_redeem(key: str) -> User:
    """Spend a login token: the user it was issued to. Raises ``LoginLinkRefused`` saying why
    when it is unknown (or its user is deactivated), used or expired."""
    if not key or len(key) > 200:
        raise LoginLinkRefused(LoginLinkProblem.UNKNOWN)
    with transaction.atomic():
        token = LoginToken.objects.select_for_update().select_related("user").filter(digest=sha256_hex(key)).first()
        if token is None or not token.user.is_active:
            raise LoginLinkRefused(LoginLinkProblem.UNKNOWN)
        if token.used_at is not None:
            raise LoginLinkRefused(LoginLinkProblem.USED)
        if token.expires_at <= timezone.now():
            raise LoginLinkRefused(LoginLinkProblem.EXPIRED)
        token.used_at = timezone.now()
        token.save(update_fields=["used_at"])
        return token.user


def signed_in_user(request: HttpRequest) -> User:
    """The request's user, for views that already required sign-in."""
    if not isinstance(request.user, User):
        raise PermissionDenied("sign in first")
    return request.user


def local_user_ensure(username: str = "local") -> User:
    """A user who signs in with printed links (made without a password if missing); never a
    guest, whose account only its own cookie opens."""
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    elif is_guest(user):
        raise AccountError("guest_account", f"{username!r} is a guest: guests sign in through invite links only")
    return user


def is_guest(user: object) -> bool:
    pk = getattr(user, "pk", None)
    return pk is not None and Guest.objects.filter(user_id=pk).exists()


def guest_name_clean(raw: str) -> str:
    """A display name as typed, its runs of spaces made one; refused when empty, too long or
    holding control or invisible characters."""
    name = " ".join(raw.split())
    if not name:
        raise AccountError("name_required", "Enter a name: the others see you by it.")
    if len(name) > GUEST_NAME_MAX:
        raise AccountError("name_too_long", f"A name is at most {GUEST_NAME_MAX} characters.")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise AccountError("bad_name", "A name cannot hold control or invisible characters.")
    return name


def guest_create(raw_name: str) -> User:
    """A new guest user named ``raw_name``: a unique username made from it ("Ada (guest)",
    then "Ada (guest 2)", ...), which no printed-link username clashes with, and no password."""
    name = guest_name_clean(raw_name)
    taken = set(User.objects.filter(username__startswith=f"{name} (guest").values_list("username", flat=True))
    number = 1
    while True:
        username = f"{name} (guest)" if number == 1 else f"{name} (guest {number})"
        number += 1
        if username in taken:
            continue
        try:
            with transaction.atomic():
                user = User(username=username, first_name=name)
                user.set_unusable_password()
                user.save()
                Guest.objects.create(user=user, name=name)
                return user
        except IntegrityError:
            if not User.objects.filter(username=username).exists():
                raise
            # The same name, joining at the same moment: take the next number.
