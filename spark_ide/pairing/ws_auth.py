"""Who is on the other end of a session socket: the session cookie or an API token.

Browsers authenticate with the cookie, so their ``Origin`` must be one of our hosts (else any
site could open a socket with the visitor's cookie). Scripts send ``Authorization: Token``;
a token is not sent by browsers on their own, so no Origin check is needed for it.
"""

from __future__ import annotations

from typing import Any

from channels.security.websocket import AllowedHostsOriginValidator

from spark_ide.accounts.services import user_from_authorization

from .lookups import cookie_auth, on_lookup_thread

_user_from_authorization = on_lookup_thread(user_from_authorization)


def _authorization(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return ""


class SessionSocketAuth:
    def __init__(self, inner: Any) -> None:
        self.with_cookie = AllowedHostsOriginValidator(cookie_auth(inner))
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = _authorization(scope)
        if header:
            user = await _user_from_authorization(header)
            if user is None:
                # Refuse the upgrade outright: a wrong token is not a cookie fallback.
                await receive()
                return await send({"type": "websocket.close", "code": 4401})
            return await self.inner({**scope, "user": user}, receive, send)
        return await self.with_cookie(scope, receive, send)
