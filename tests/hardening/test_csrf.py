"""CSRF on every HTTP write (issue 16), generated like the authorisation matrix: every URL
pattern and write method that test's table (tests/hardening/test_authorisation.py) says some
signed-in person may use is sent by that person's browser session without a CSRF token, and
must answer 403 with nothing changed in the database. A pattern the table does not know
fails there; here, a write that gets through fails.

Calls with ``Authorization: Token ...`` are exempt by design: a browser never adds that header
to a request another site makes it send, so the token itself is the proof (one check at the
end shows the exemption, so that it stays deliberate)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.core import serializers
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH
from django.test import Client
from django.utils.crypto import get_random_string

from spark_ide.accounts.services import api_token_create
from tests.hardening.test_authorisation import HTTP, PEOPLE, build_world, url_for, url_patterns

WRITES = ("POST", "PUT", "DELETE")
# Who sends each write: the first of these the table lets through (not refused before the CSRF
# check could matter: 401/403/404/405), so a write that would work fails only for want of a token.
SENDERS = ("owner", "collaborator", "other", "guest")
REFUSED = {401, 403, 404, 405}


def database_state() -> str:
    """A digest of every row of every model but sessions (signing in writes one)."""
    digest = hashlib.sha256()
    for model in sorted(apps.get_models(), key=lambda m: m._meta.label):
        if model._meta.label in {"sessions.Session"}:
            continue
        digest.update(serializers.serialize("json", model._default_manager.order_by("pk")).encode())
    return digest.hexdigest()


def sender(statuses: str) -> str | None:
    answers = dict(zip(PEOPLE, (int(s) for s in statuses.split()), strict=True))
    return next((person for person in SENDERS if answers[person] not in REFUSED), None)


@pytest.mark.django_db
def test_every_write_without_a_csrf_token_is_refused_and_changes_nothing(django_user_model: Any) -> None:
    world = build_world(django_user_model)
    clients: dict[str, Client] = {}
    for person in SENDERS:
        clients[person] = Client(enforce_csrf_checks=True)
        clients[person].force_login(world.people[person])
        # The CSRF cookie a browser that visited the site holds (a forged request carries it
        # too): only the token in the request itself is missing.
        clients[person].cookies[settings.CSRF_COOKIE_NAME] = get_random_string(CSRF_SECRET_LENGTH, CSRF_ALLOWED_CHARS)
    before = database_state()
    tried, wrong = [], []
    for route, pattern in url_patterns():
        rules = HTTP[pattern.name or route]
        url = url_for(route, pattern, world)
        for method in WRITES:
            who = sender(rules[method]) if method in rules else None
            if who is None:
                continue
            client = clients[who]
            if method == "PUT":
                response = client.generic(method, url, "x = 2\n", content_type="text/plain")
            else:
                response = getattr(client, method.lower())(url, {"name": "csrf"} if method == "POST" else None)
            tried.append(f"{method} {pattern.name or route}")
            if response.status_code != 403:
                wrong.append(f"{method} {url} as {who}: {response.status_code}")
            elif url.startswith("/api/"):
                assert response.json()["error"]["code"] == "csrf_failed"
    assert not wrong, "writes that went through without a CSRF token:\n" + "\n".join(wrong)
    assert database_state() == before
    # Every form and API write of the site is in the list (the table's own count, not ours).
    assert len(tried) >= 25, tried
    print(f"\n{len(tried)} writes without a CSRF token, each refused: {', '.join(tried)}")

    # The exemption: the same API write with a token (and no cookie, no CSRF token) works.
    token = api_token_create(user=world.owner, name="cli")
    api = Client(enforce_csrf_checks=True)
    path = f"/api/workspaces/{world.workspace.id}/files/app.py"
    response = api.put(path, "x = 3\n", content_type="text/plain", headers={"Authorization": f"Token {token}"})
    assert response.status_code == 200


@pytest.mark.django_db
def test_no_get_joins_enrols_or_grants_anything(django_user_model: Any) -> None:
    """A GET is not a write (the CSRF check guards writes only): a link preview, a prefetch or
    an ``<img>`` on another site opening an invite or a course link must not make anyone join.
    Every route of the site, GET as each person: no role, enrollment or copy appears. (A page
    may still make what only its viewer owns, such as the live session of their own workspace.)"""
    from spark_ide.classroom.models import Enrollment
    from spark_ide.pairing.models import Participant

    world = build_world(django_user_model)
    before = (sorted(Participant.objects.values_list("session_id", "user_id", "role")),
              sorted(Enrollment.objects.values_list("course_id", "student_id")))
    opened = 0
    for person in PEOPLE:
        client = Client()
        if person != "anonymous":
            client.force_login(world.people[person])
        for route, pattern in url_patterns():
            client.get(url_for(route, pattern, world))
            opened += 1
    after = (sorted(Participant.objects.values_list("session_id", "user_id", "role")),
             sorted(Enrollment.objects.values_list("course_id", "student_id")))
    assert after == before
    assert opened >= 7 * 40
