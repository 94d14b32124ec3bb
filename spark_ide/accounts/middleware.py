"""Sign in from a one-time ``?token=...`` link (the URL ``make run`` prints)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from .services import login_token_redeem


class LoginTokenMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        key = request.GET.get("token")
        if key is None or request.method != "GET" or request.path.startswith("/api/"):
            return self.get_response(request)
        user = login_token_redeem(key)
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        # Drop the token from the address bar either way, so it is not bookmarked or shared.
        rest = request.GET.copy()
        del rest["token"]
        target = request.path + ("?" + urlencode(list(rest.lists()), doseq=True) if rest else "")
        return HttpResponseRedirect(target)
