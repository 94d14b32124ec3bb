"""Sign-in pages, the API token page and the API keys page (a person's own provider keys)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from .models import KEY_PROVIDERS, ApiToken
from .provider_keys import (
    own_keys_only,
    own_keys_only_set,
    provider_key_delete,
    provider_key_store,
    provider_keys_of,
)
from .services import LOGIN_LINK_MESSAGES, AccountError, api_token_create, signed_in_user


class SignInView(LoginView):
    """Django's sign-in form, which also says why a sign-in link did not work (``?link=``)."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["link_problem"] = LOGIN_LINK_MESSAGES.get(self.request.GET.get("link", ""), "")
        return context


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    new_key = None
    if request.method == "POST":
        if "delete" in request.POST:
            ApiToken.objects.filter(user=user, pk=request.POST["delete"]).delete()
        else:
            new_key = api_token_create(user=user, name=request.POST.get("name", ""))
    context = {
        "tokens": ApiToken.objects.filter(user=user).order_by("-created_at"),
        "new_key": new_key,
    }
    return render(request, "accounts/tokens.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("key")  # Django's error reports leave it out
def keys(request: HttpRequest) -> HttpResponse:
    """Store (``provider``, ``key``), delete (``delete``: the id of one's own) and choose
    ``own_keys_only``. The key is never rendered back, not even after a refusal. Guests never
    reach this (``GuestMiddleware``), and the services refuse them too."""
    user = signed_in_user(request)
    error: AccountError | None = None
    stored = None
    if request.method == "POST":
        try:
            if "delete" in request.POST:
                provider_key_delete(user=user, key_id=request.POST["delete"])
            elif "own_keys_only" in request.POST:
                own_keys_only_set(user=user, value=request.POST["own_keys_only"] == "on")
            else:
                stored = provider_key_store(
                    user=user, provider=request.POST.get("provider", ""), key=request.POST.get("key", ""),
                )
        except AccountError as exc:
            error = exc
    context = {
        "keys": provider_keys_of(user), "providers": KEY_PROVIDERS, "own_keys_only": own_keys_only(user.pk),
        "error": error, "stored": stored,
    }
    return render(request, "accounts/keys.html", context)
