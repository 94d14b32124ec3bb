"""The Celery task of a code run: run it in the sandbox, stream it to a channel-layer group.

JSON arguments only. Output goes out as ``run.output`` batches while the program runs, then
one ``run.finished`` (the session events of those names, ``live.events``: the room relays them
as they come); stdin and Stop reach the run through `spark_ide.sandbox.control`.

Eager (the embedded default) the task runs in the caller's thread, which must be a
``sync_to_async`` thread of the server (``thread_sensitive=False``: a run may take the wall
limit, and must not hold up the thread every ORM call shares); the messages then go out on
the server's own event loop. In a worker it keeps one event loop of its own for the run, so
the Redis channel layer opens one connection per run, not one per message.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from spark_ide.celery import app
from spark_ide.live.events import RunError, RunFinished, RunOutput
from spark_ide.sandbox.control import checked_run_id, run_control
from spark_ide.sandbox.core import BadRun, Limits, NoFreeUid, RunResult, Sandbox, SandboxUnavailable, UidPool
from spark_ide.sandbox.core.limits import MB


def settings_limits() -> Limits:
    return Limits(
        cpu_seconds=settings.SPARK_SANDBOX_CPU_S,
        memory_bytes=settings.SPARK_SANDBOX_MEMORY_MB * MB,
        processes=settings.SPARK_SANDBOX_PROCESSES,
        file_bytes=settings.SPARK_SANDBOX_FILE_BYTES,
        open_files=settings.SPARK_SANDBOX_OPEN_FILES,
        output_bytes=settings.SPARK_SANDBOX_OUTPUT_BYTES,
        wall_seconds=settings.SPARK_SANDBOX_WALL_S,
        disk_bytes=settings.SPARK_SANDBOX_DISK_MB * MB,
    )


def run_limits(overrides: Mapping[str, Any] | None) -> Limits:
    """The settings' limits, each lowered (never raised) by ``overrides`` (a class's stricter limits)."""
    limits = settings_limits()
    if not overrides:
        return limits
    known = {field.name for field in dataclasses.fields(Limits)}
    unknown = set(overrides) - known
    if unknown:
        raise BadRun(f"unknown sandbox limits: {', '.join(sorted(unknown))}")
    lowered = {name: min(value, getattr(limits, name)) for name, value in overrides.items()}
    return dataclasses.replace(limits, **lowered)


def settings_sandbox(limits: Limits) -> Sandbox:
    return Sandbox(
        limits=limits,
        python=settings.SPARK_SANDBOX_PYTHON,
        uid_pool=UidPool(first=settings.SPARK_SANDBOX_UID_FIRST, count=settings.SPARK_SANDBOX_UID_COUNT),
        allow_unsandboxed=settings.SPARK_SANDBOX_ALLOW_UNSANDBOXED,
    )


class GroupSender:
    """``group_send`` from a synchronous task, on the right event loop (see the module's docstring)."""

    def __init__(self, layer: BaseChannelLayer) -> None:
        self._layer = layer
        self._loop = None if isinstance(layer, InMemoryChannelLayer) else asyncio.new_event_loop()

    def send(self, group: str, message: Mapping[str, Any]) -> None:
        if self._loop is None:
            async_to_sync(self._layer.group_send)(group, dict(message))
        else:
            self._loop.run_until_complete(self._layer.group_send(group, dict(message)))

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()  # channels_redis closes this loop's connections with it


def finished(run: str, result: RunResult) -> RunFinished:
    """The ``run.finished`` of a run that ended (no exit code when the sandbox ended it)."""
    return RunFinished(
        run=run, exit_code=result.exit_code, duration_ms=result.duration_ms, status=result.status.value,
        truncated=result.truncated, message=result.message, sandboxed=result.sandboxed,
    )


@app.task(name="spark_ide.sandbox.run_code", ignore_result=False)  # type: ignore[untyped-decorator]
def run_code(
    run: str, group: str, files: dict[str, str], path: str | None = None, tests: bool = False,
    limits: dict[str, float] | None = None, args: list[str] | None = None,
) -> dict[str, Any]:
    """Run ``python path [args]`` (or ``pytest [args]``) on ``files``; stream to ``group``;
    return ``run.finished``."""
    layer = get_channel_layer()
    assert layer is not None, "CHANNEL_LAYERS is not configured"
    sender = GroupSender(layer)
    try:
        try:
            checked_run_id(run)
            started = settings_sandbox(run_limits(limits)).start(
                files, path=path, tests=tests, args=args or (), on_output=lambda stream, text: sender.send(
                    group, RunOutput(run=run, stream=stream, text=text).payload()),
            )
        except BadRun as exc:
            end = RunFinished.refused(run, RunError.BAD_RUN, str(exc))
        except SandboxUnavailable as exc:
            end = RunFinished.refused(run, RunError.SANDBOX_UNAVAILABLE, str(exc))
        except NoFreeUid as exc:
            end = RunFinished.refused(run, RunError.SANDBOX_BUSY, str(exc))
        else:
            with run_control().attach(run, started):
                end = finished(run, started.wait())
        sender.send(group, end.payload())
        return end.payload()
    finally:
        sender.close()
