"""Sign-in pages and the API token page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from .models import ApiToken
from .services import LOGIN_LINK_MESSAGES, api_token_create, signed_in_user


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
