"""The Content-Security-Policy header and what it relies on (issue 16): every HTML page gets
the policy with a nonce of its own, the same one its ``csp-nonce`` meta tag hands the editor;
no template holds inline script, an inline handler or a style attribute (the policy would
refuse them); and the cookies are Secure exactly when the deployment says it is behind TLS.
The browser's side (no violation in Chromium) is tests/browser/test_csp.py."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]{20,})'")


def directives(header: str) -> dict[str, str]:
    return {part.split()[0]: part.partition(" ")[2] for part in (p.strip() for p in header.split(";")) if part}


@pytest.mark.django_db
def test_every_html_page_has_the_policy_with_a_fresh_nonce(user: Any) -> None:
    client = Client()
    client.force_login(user)
    pages = [client.get("/"), client.get("/"), Client().get("/login/"), client.get("/api/workspaces")]
    nonces = []
    for response in pages[:3]:
        header = response["Content-Security-Policy"]
        policy = directives(header)
        assert policy["script-src"] == "'self'"
        assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
        assert policy["base-uri"] == "'self'"
        assert policy["connect-src"] == "'self' ws://testserver"
        assert "unsafe" not in header
        match = NONCE.search(policy["style-src"])
        assert match is not None
        nonces.append(match.group(1))
        assert f'<meta name="csp-nonce" content="{match.group(1)}">' in response.content.decode()
    assert len(set(nonces)) == 3, "a nonce is never reused"
    assert "Content-Security-Policy" not in pages[3], "JSON answers carry no page policy"
    secure = Client().get("/login/", secure=True)["Content-Security-Policy"]
    assert "wss://testserver" in secure and "ws://testserver" not in secure


INLINE = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I),
    "inline handler": re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I | re.S),
    "style attribute": re.compile(r"<[a-z][^>]*\sstyle\s*=", re.I | re.S),
    "style element": re.compile(r"<style\b", re.I),
    "htmx hx-on": re.compile(r"\s(data-)?hx-on", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def test_no_template_holds_code_or_styles_the_policy_refuses() -> None:
    found = []
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert len(templates) > 20
    for template in templates:
        text = template.read_text()
        found += [f"{template.relative_to(ROOT)}: {what}" for what, pattern in INLINE.items() if pattern.search(text)]
    assert not found, found


def cookie_settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> list[object]:
    """The cookie and proxy settings the settings module makes of ``env`` (run afresh: Django
    itself reads them once)."""
    with monkeypatch.context() as patch:
        for name in ("SPARK_TLS", "SPARK_SITE_URL", "SPARK_ENV"):
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        s = runpy.run_path(str(ROOT / "spark_ide" / "settings.py"))
    return [
        s["SESSION_COOKIE_SECURE"], s["CSRF_COOKIE_SECURE"], s["SESSION_COOKIE_HTTPONLY"], s["SESSION_COOKIE_SAMESITE"],
        "SECURE_PROXY_SSL_HEADER" in s,
    ]


def test_cookies_are_secure_behind_tls_and_only_there(monkeypatch: pytest.MonkeyPatch) -> None:
    plain, tls = [False, False, True, "Lax", False], [True, True, True, "Lax", True]
    assert cookie_settings(monkeypatch) == plain
    assert cookie_settings(monkeypatch, SPARK_TLS="1") == tls
    assert cookie_settings(monkeypatch, SPARK_SITE_URL="https://ide.example.org") == tls
    assert cookie_settings(monkeypatch, SPARK_SITE_URL="https://ide.example.org", SPARK_TLS="") == tls  # compose
    assert cookie_settings(monkeypatch, SPARK_SITE_URL="https://ide.example.org", SPARK_TLS="0") == plain
