"""Sign in from a one-time ``?token=...`` link (the URL ``make run`` prints)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url

from .services import LoginLinkRefused, login_token_redeem


class LoginTokenMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        key = request.GET.get("token")
        if key is None or request.method != "GET" or request.path.startswith("/api/"):
            return self.get_response(request)
        # Drop the token from the address bar either way, so it is not bookmarked or shared.
        rest = request.GET.copy()
        del rest["token"]
        target = request.path + ("?" + urlencode(list(rest.lists()), doseq=True) if rest else "")
        try:
            user = login_token_redeem(key)
        except LoginLinkRefused as refused:
            if request.user.is_authenticated:
                return HttpResponseRedirect(target)
            # Nobody is signed in: the sign-in page says why the link did not do it.
            query = urlencode({"link": refused.problem.value, "next": target})
            return HttpResponseRedirect(f"{resolve_url(settings.LOGIN_URL)}?{query}")
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return HttpResponseRedirect(target)
