"""The *Usage* page (``/usage/``): what the turns a person asked for used, by day and model."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from spark_ide.accounts.services import signed_in_user

from .usage import by_day_and_model, total

DAYS_SHOWN = 31


@login_required
@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    """The signed-in person's own use only (no one else's: there is no parameter to ask for it)."""
    user = signed_in_user(request)
    rows = by_day_and_model(user.pk, days=DAYS_SHOWN)
    turns, usage = total(rows)
    context = {
        "rows": rows, "turns": turns, "usage": usage, "days": DAYS_SHOWN,
        "daily_budget": settings.SPARK_DAILY_BUDGET_USD,
    }
    return render(request, "pairing/usage.html", context)
