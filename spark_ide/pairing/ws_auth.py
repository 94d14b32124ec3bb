"""Who may open a session socket: the session cookie or an API token.

Browsers authenticate with the cookie, so their ``Origin`` must be one of our hosts (else any
site could open a socket with the visitor's cookie). Scripts send ``Authorization: Token``;
a token is not sent by browsers on their own, so no Origin check is needed for it.

This middleware only sorts sockets into those two ways in: it reads nothing from the
database. The consumer resolves the user (``who``), the session and the role in one trip to
a lookup thread (``pairing.lookups``): in a reconnect storm each trip is a wait in a queue,
and channels' ``AuthMiddleware`` made it two.
"""

from __future__ import annotations

from typing import Any

from channels.auth import get_user
from channels.security.websocket import AllowedHostsOriginValidator
from channels.sessions import CookieMiddleware, SessionMiddleware

from spark_ide.accounts.services import user_from_authorization


def authorization(scope: dict[str, Any]) -> str:
    """The ``Authorization`` header's value ("" without one)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return ""


def who(scope: dict[str, Any]) -> Any:
    """The user a socket's scope authenticates (blocking: a database read), or None.

    A token when the socket sent one (wrong: None, never a cookie fallback), else the cookie's
    session (an ``AnonymousUser`` without one); a scope that already names its user (a test's,
    another middleware's) is taken as it is."""
    if "user" in scope:
        return scope["user"]
    header = authorization(scope)
    if header:
        return user_from_authorization(header)
    if "session" in scope:
        return get_user.func(scope)  # channels' cookie-session read, run here on our thread
    return None


class SessionSocketAuth:
    def __init__(self, inner: Any) -> None:
        self.with_cookie = AllowedHostsOriginValidator(CookieMiddleware(SessionMiddleware(inner)))
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if authorization(scope):
            return await self.inner(scope, receive, send)
        return await self.with_cookie(scope, receive, send)
