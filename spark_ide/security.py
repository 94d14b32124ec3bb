"""The Content-Security-Policy of every HTML page (issue 16, docs/security.md).

The policy lets a page run only the bundle we serve (``script-src 'self'``: no inline script,
no inline event handler, no ``eval``), so text that slips into a page unescaped cannot run.
Styles come from our origin, plus one ``<style>`` element CodeMirror writes at run time (its
themes, made in JavaScript): that element carries a nonce, new for every response, which the
page hands to the editor through ``<meta name="csp-nonce">`` (``EditorView.cspNonce``; htmx
gets it too, for its indicator styles). Colours set from JavaScript go through the CSSOM
(``element.style.x = ...``, constructed style sheets), which a CSP does not restrict, so no
``'unsafe-inline'`` is needed anywhere.

The socket of a live session is named explicitly in ``connect-src``: ``'self'`` covers
``ws:``/``wss:`` of the same host only in browsers that follow CSP level 3.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
NONCE_BYTES = 18  # 24 characters of base64: the nonce must not be guessable


def policy(*, nonce: str, host: str | None, secure: bool) -> str:
    """The policy for one response: ``host`` and ``secure`` name the page's own socket origin
    (``host`` None: a request for a host we do not serve, whose page opens no socket)."""
    socket = "" if host is None else f" {'wss' if secure else 'ws'}://{host}"
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": f"'self' 'nonce-{nonce}'",
        # CodeMirror's lint marks draw their wavy underline from a data: SVG.
        "img-src": "'self' data:",
        "connect-src": f"'self'{socket}",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def _is_html(response: HttpResponse) -> bool:
    return str(response.get("Content-Type", "")).split(";")[0].strip().lower() == "text/html"


class ContentSecurityPolicyMiddleware:
    """Gives each request a fresh nonce (``request.csp_nonce``, which templates render) and
    sets the policy on HTML responses that have none of their own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(NONCE_BYTES)
        request.csp_nonce = nonce  # type: ignore[attr-defined]  # read by templates as request.csp_nonce
        response = self.get_response(request)
        if _is_html(response) and HEADER not in response:
            response[HEADER] = policy(nonce=nonce, host=_host(request), secure=request.is_secure())
        return response


def _host(request: HttpRequest) -> str | None:
    try:
        return request.get_host()
    except DisallowedHost:  # answered 400 already; its page needs no socket
        return None
