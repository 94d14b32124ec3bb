"""The Django side of the security watchdog (``live.watchdog``): the mode stored for a workspace,
and the full scan after a turn as a Celery task.

The full scan (bandit and ruff ``S`` over whole files) takes tens to hundreds of milliseconds
of CPU: with ``REDIS_URL`` it runs in a Celery worker, so it never takes the CPU of the
process serving sockets; in the embedded default it runs in the room's scan process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from spark_ide.celery import app
from spark_ide.guard import Finding, Severity, Tier, full_scan
from spark_ide.live.scan_process import scan_in_process

MAX_SCAN_FILES = 200  # a turn touches a few files; a task's arguments stay small


@app.task(name="spark_ide.guard.full_scan", serializer="json")  # type: ignore[untyped-decorator]
def full_scan_task(files: dict[str, str]) -> list[dict[str, object]]:
    """JSON in, JSON out: the findings of the full scan of ``files`` (path -> text)."""
    if not isinstance(files, dict):
        return []
    texts = {str(path): text for path, text in list(files.items())[:MAX_SCAN_FILES] if isinstance(text, str)}
    return [finding.as_dict() for finding in full_scan(texts)]


def finding_from(data: Mapping[str, Any]) -> Finding:
    """A finding back from the task's JSON."""
    return Finding(
        rule=str(data["rule"]), severity=Severity.parse(str(data["severity"])), path=str(data["path"]),
        line=int(data["line"]), message=str(data["message"]), fix=str(data.get("fix", "")),
        tier=Tier(str(data["tier"])),
    )


def _scan(files: dict[str, str]) -> list[dict[str, object]]:
    pending = full_scan_task.apply_async(kwargs={"files": files}, serializer="json")
    found: list[dict[str, object]] = pending.get(timeout=settings.SPARK_GUARD_SCAN_TIMEOUT_S)
    return found


async def celery_full_scan(files: Mapping[str, str]) -> list[Finding]:
    """``live.watchdog.FullScan``: a task on the Celery workers when there are any (``REDIS_URL``);
    in the embedded default (eager Celery, which would run it in a thread of this server, its
    bandit holding the GIL the rooms need for up to a second) the same scan in the scan process."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return await scan_in_process(files)
    found = await sync_to_async(_scan, thread_sensitive=False)(dict(files))
    return [finding_from(item) for item in found]
