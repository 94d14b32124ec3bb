"""Fixtures shared by the Django-side tests, and the selection of the services pass.

``make test-services`` runs ``pytest --services`` with ``DATABASE_URL`` on PostgreSQL and
``REDIS_URL`` set (the Redis channel layer, the rooms' lease and bus, the Celery broker). It
runs again only the tests that touch those services, chosen as they are collected:

* every test that uses the database inside its own transaction (``django_db`` without
  ``transaction=True``, or the ``db`` fixture): models, services, the HTTP API and pages, whose
  queries PostgreSQL may answer differently from SQLite;
* every test marked ``services``: a test through a live room (those need ``transaction=True``)
  or without the database, whose subject is storage (persistence, the event log, run records),
  the channel layer or the lease, or the Celery broker. A room test of the Pilot's logic is
  not marked: in that pass it would only repeat itself on slower storage.
* ``services(only=True)``: only in that pass (it needs the real broker); the first pass
  leaves it out.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--services", action="store_true",
        help="the services pass (make test-services): with DATABASE_URL on PostgreSQL and REDIS_URL set, "
             "only the tests that touch storage, Redis or the Celery broker (tests/conftest.py says which)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--services"):
        return
    database = os.environ.get("DATABASE_URL", "")
    if not database.startswith(("postgres://", "postgresql://")) or not os.environ.get("REDIS_URL"):
        raise pytest.UsageError("--services needs DATABASE_URL on PostgreSQL and REDIS_URL (make test-services)")


def in_services_pass(item: pytest.Item) -> bool:
    """Whether the services pass runs ``item`` (the rules in this module's docstring)."""
    if item.get_closest_marker("services") is not None:
        return True
    db = item.get_closest_marker("django_db")
    if db is not None:
        return not db.kwargs.get("transaction", db.args[0] if db.args else False)
    fixtures = getattr(item, "fixturenames", ())
    return "db" in fixtures and "transactional_db" not in fixtures


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    services = bool(config.getoption("--services"))
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("services")
        wanted = in_services_pass(item) if services else marker is None or not marker.kwargs.get("only", False)
        (kept if wanted else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def require(condition: bool, reason: str) -> None:
    """Skip when a real service or tool is missing; under CI a missing one is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required under CI: {reason}")
    pytest.skip(reason)


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Under CI nothing may be skipped: a missing model, browser or service is a failure.

    (``require`` already fails instead of skipping; this catches ``skipif`` marks too.)
    """
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which must run everything: {report.longrepr}"


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashes() -> Iterator[None]:
    """Users made by the tests get MD5 password hashes: PBKDF2 costs a third of a second of CPU
    per password set or checked, and most tests make two users (production hashing is Django's
    and not under test; no test's user logs in to another process with a password)."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="ada", password="correct horse 42")


@pytest.fixture
def other_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="bob", password="battery staple 42")


@pytest.fixture
def token(user: Any) -> str:
    from spark_ide.accounts.services import api_token_create

    return api_token_create(user=user)


@pytest.fixture
def api(client: Any, token: str) -> Iterator[Any]:
    """A Django test client that authenticates with an API token."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token}"
    yield client


@pytest.fixture(autouse=True)
def _eager_celery(request: pytest.FixtureRequest) -> None:
    """Tasks (code runs, the watchdog's full scan) run in the test's process unless a test
    starts a real worker: with the Redis settings and no worker, a task would wait for one.
    The tests that need a real worker over Redis (tests/sandbox, tests/guard) use their own
    Celery client and queue."""
    from django.conf import settings

    if settings.configured and not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("settings").CELERY_TASK_ALWAYS_EAGER = True
