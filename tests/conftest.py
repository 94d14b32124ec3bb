"""Fixtures shared by the Django-side tests."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


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
