"""Where the running IDE answers, for links printed outside a request.

``manage.py spark_run`` records its address in the data directory while it runs, so a link
printed by another command (``spark_login_url``) points at the server actually running;
without a live record the links use ``SITE_URL``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from django.conf import settings


def _record_path() -> Path:
    return Path(settings.DATA_DIR) / "running.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but alive
    return True


@contextmanager
def running_at(url: str) -> Iterator[None]:
    """Record ``url`` as the running server's address for as long as the block runs."""
    path = _record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": url, "pid": os.getpid()}))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def site_url() -> str:
    """The running server's address when its process still runs, else ``SITE_URL``."""
    with suppress(OSError, ValueError, KeyError, TypeError):
        record = json.loads(_record_path().read_text())
        if _alive(int(record["pid"])):
            return str(record["url"])
    return str(settings.SITE_URL)
