"""``/metrics``: the host's Prometheus metrics, for staff or the bearer token."""

from __future__ import annotations

import hmac
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from .metrics import exposition


def _refused(status: int, message: str, *, challenge: str = "") -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    if challenge:
        response["WWW-Authenticate"] = challenge
    response["Cache-Control"] = "no-store"
    return response


def token_matches(header: str, token: str) -> bool:
    """``header`` is ``Bearer <token>`` (compared in constant time; no token set: never)."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Every IDE process of this host, summed (docs/operations.md). A bearer header is judged
    alone; without one, the session must be a staff member's."""
    header = request.headers.get("Authorization", "")
    if header:
        if not token_matches(header, settings.SPARK_METRICS_TOKEN):
            return _refused(401, "the metrics token is wrong (or SPARK_METRICS_TOKEN is not set)",
                            challenge='Bearer realm="metrics", error="invalid_token"')
    elif not request.user.is_authenticated:
        return _refused(401, "send 'Authorization: Bearer <SPARK_METRICS_TOKEN>' or sign in as staff",
                        challenge='Bearer realm="metrics"')
    elif not request.user.is_staff:
        return _refused(403, "the metrics are for staff")
    response = HttpResponse(exposition(Path(settings.PROMETHEUS_MULTIPROC_DIR)), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
