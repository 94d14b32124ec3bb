"""What a guest may reach. A guest (``models.Guest``) holds only the roles invites gave it: it
sees the sessions it takes part in and nothing else. Views open to guests say so with
``@guests_allowed``; ``GuestMiddleware`` refuses guests every other view, so a new view is
closed to them until someone decides otherwise."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from spark_ide.api_errors import ApiCode, error_response

from .services import is_guest

View = TypeVar("View", bound=Callable[..., HttpResponseBase | Awaitable[HttpResponseBase]])

# The page a guest lands on instead of the workspace list (served by the pairing app).
GUEST_HOME = "guest-home"
# What the API answers a guest (``guest_forbidden``) outside what it was invited to.
GUEST_API_REFUSAL = "a guest can only use the sessions it was invited to"


def guests_allowed(view: View) -> View:
    """Open ``view`` to guests (it checks their role in the session itself)."""
    view.guests_allowed = True  # type: ignore[attr-defined]
    return view


class GuestMiddleware:
    """Holds guests to the views marked ``@guests_allowed``: the workspace list (where a
    sign-in lands) sends them to their session, the API answers ``guest_forbidden``, other
    pages say what a guest can do."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        if getattr(view, "guests_allowed", False) or not request.user.is_authenticated:
            return None
        if not is_guest(request.user):
            return None
        match = request.resolver_match
        if match is not None and match.url_name == settings.LOGIN_REDIRECT_URL:
            return HttpResponseRedirect(reverse(GUEST_HOME))
        if request.path.startswith("/api/"):
            return error_response(ApiCode.GUEST_FORBIDDEN, GUEST_API_REFUSAL)
        return render(request, "accounts/guest_forbidden.html", status=403)
