"""Where the running IDE answers, for links printed outside a request.

``manage.py spark_run`` records its server while it runs (``spark_ide.running``), so a
link printed by another command (``spark_login_url``) points at the server actually running
on the same data; without one the links use ``SITE_URL``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError

from spark_ide.running import RunningServer, describe, recorded, running


def _data_dir() -> str:
    return str(Path(settings.DATA_DIR).resolve())


@contextmanager
def running_at(url: str) -> Iterator[None]:
    """Record ``url`` as the address of the server running on this data for as long as the
    block runs."""
    server = RunningServer(
        url=url, pid=os.getpid(), data_dir=_data_dir(), database_url=bool(os.environ.get("DATABASE_URL")),
    )
    with recorded(server, Path(settings.BASE_DIR)):
        yield


def servers_elsewhere() -> list[RunningServer]:
    """The servers running from this checkout on another data directory than this process's."""
    here = _data_dir()
    return [server for server in running(Path(settings.BASE_DIR)) if server.data_dir != here]


def site_url() -> str:
    """The address of the server running on this data, if one does, else ``SITE_URL``."""
    here = _data_dir()
    for server in running(Path(settings.BASE_DIR)):
        if server.data_dir == here:
            return server.url
    return str(settings.SITE_URL)


@contextmanager
def servers_database() -> Iterator[None]:
    """For a command acting on the server's data: a database that was never set up (``no
    such table``) is a plain ``CommandError`` that says which data it read and what to set,
    not a traceback."""
    try:
        yield
    except DatabaseError as exc:
        where = "the database DATABASE_URL names" if os.environ.get("DATABASE_URL") else f"{settings.DATA_DIR}"
        others = servers_elsewhere()
        if others:
            hint = (
                f"A Spark IDE server runs from this checkout on other data: {describe(others)}. Set SPARK_DATA_DIR "
                "to its data directory."
            )
        else:
            hint = (
                "Set SPARK_DATA_DIR to the data directory of the Spark IDE server you mean, or run "
                "`manage.py migrate` to set this one up."
            )
        raise CommandError(f"{where} holds no Spark IDE database ({exc}). {hint}") from None
