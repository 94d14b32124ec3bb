"""What every JSON API view shares: authentication, CSRF for cookie sessions, JSON errors.

``/api/`` never answers with an HTML page: a client gets ``{"error": {"code", "message"}}``
with a fitting status, whatever went wrong.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.csrf import csrf_exempt

from spark_ide.accounts.services import user_from_authorization
from spark_ide.api_errors import ApiCode, ApiError, error_response

log = logging.getLogger(__name__)

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: JSON under ``/api/``, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return error_response(ApiCode.CSRF_FAILED, f"CSRF check failed: {reason}")
    return django_csrf_failure(request, reason=reason)


def _check_csrf(request: HttpRequest) -> HttpResponse | None:
    """Django's own CSRF check, for writes authenticated by the session cookie."""
    checker = CsrfViewMiddleware(lambda _request: HttpResponse())
    checker.process_request(request)
    return checker.process_view(request, lambda _request: HttpResponse(), (), {})


def _authenticate(request: HttpRequest) -> HttpResponse | None:
    """Sign the request in from its token or session; a response when it must be refused."""
    header = request.headers.get("Authorization", "")
    if header:
        user = user_from_authorization(header)
        if user is None:
            raise ApiError(ApiCode.BAD_TOKEN, "the API token is unknown or revoked")
        request.user = user
        return None
    if request.user.is_authenticated:
        return None if request.method in SAFE_METHODS else _check_csrf(request)
    raise ApiError(ApiCode.NOT_AUTHENTICATED, "send 'Authorization: Token <key>' or sign in")


def api_view(
    methods: set[str],
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Wrap a JSON view: allowed methods, authentication, ApiError -> JSON error."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                if request.method not in methods:
                    allowed = ", ".join(sorted(methods))
                    response = error_response(ApiCode.METHOD_NOT_ALLOWED, f"use {allowed}")
                    response["Allow"] = allowed
                    return response
                refusal = _authenticate(request)
                if refusal is not None:
                    return refusal
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc.code, exc.message)
            except RequestDataTooBig:
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                return error_response(ApiCode.FILE_TOO_LARGE, f"the body is over {limit} bytes")
            except Exception:
                log.exception("API view %s failed", view.__name__)
                return error_response(ApiCode.INTERNAL_ERROR, "the server failed; see its log")

        return wrapper

    return decorate


def json_body(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 with a clear reason."""
    try:
        data = json.loads(request.body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(ApiCode.MALFORMED_JSON, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(ApiCode.MALFORMED_JSON, "the body must be a JSON object")
    return data


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return error_response(ApiCode.NOT_FOUND, f"no API endpoint at {request.path}")
