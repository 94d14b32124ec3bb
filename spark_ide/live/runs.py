"""Code runs of a room: one at a time, on the files as the live document holds them, seen by
every participant as it happens, and recorded.

The sandbox itself (``spark_ide.sandbox``) runs behind the injected ``Runner``; this part
decides what runs, tells everyone, passes stdin and Stop on, and keeps the record.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spark_ide.editing.paths import BadPath, clean_path
from spark_ide.guard import Finding

from .background import Background
from .events import ErrorCode, ErrorEvent, Event, RunFinished, RunOutput, RunStarted
from .records import Records
from .store import LiveSettings, RoomStore, RunMessage, RunOutcome, RunRecord, run_refused
from .transport import Connection

log = logging.getLogger(__name__)

KEPT_OUTPUT_CHARS = 64_000  # of a run's output in its record (the sandbox caps it about there too)
ROOM_CLOSED = "stopped: the room closed while it ran"


def confirmation_needed(high: list[Finding], *, path: str, tests: bool) -> ErrorEvent:
    """The answer to a run asked for while the files hold ``high``-severity watchdog findings:
    the person is shown them and confirms (``run`` again with ``confirm``)."""
    listed = "; ".join(f"{f.path} {f.message}" for f in high[:5])
    more = f" (and {len(high) - 5} more)" if len(high) > 5 else ""
    return ErrorEvent(
        ErrorCode.RUN_NEEDS_CONFIRMATION,
        f"the watchdog found {len(high)} high-severity problem{'s' if len(high) > 1 else ''} in the code: "
        f"{listed}{more}. Run it anyway?",
        ref={"path": path, "tests": tests, "findings": [f.as_dict() for f in high]},
    )


@dataclass
class _Running:
    id: str
    started: RunStarted
    output: list[str] = field(default_factory=list)
    kept: int = 0
    began: float = field(default_factory=time.monotonic)


class RoomRuns:
    def __init__(
        self, *, store: RoomStore, settings: LiveSettings, texts: Callable[[], dict[str, str]],
        announce: Callable[[Event], None],
    ) -> None:
        self._store = store
        self._settings = settings
        self._texts = texts
        self._announce = announce
        self._records = Records(settings.persist_retries)
        self._running: _Running | None = None
        self._background = Background()

    def start(self) -> None:
        self._records.start()

    async def close(self) -> None:
        """A run going on when the room closes (idle, shut down, moved to another process) is
        stopped and recorded as ended here: its own ``run.finished`` would come after the
        records are closed, to a room that no longer listens, and leave it ``running``."""
        running = self._running
        if running is not None:
            self._settings.runner.stop(running.id)
            self._finish(running, RunFinished(
                run=running.id, exit_code=None, duration_ms=round((time.monotonic() - running.began) * 1000),
                status="killed", truncated=False, message=ROOM_CLOSED, sandboxed=False,
            ))
        await self._records.close()

    @property
    def running(self) -> str | None:
        return None if self._running is None else self._running.id

    @property
    def started(self) -> RunStarted | None:
        """The ``run.started`` of the run going on: a page that joins now is told it too."""
        return None if self._running is None else self._running.started

    def run(self, conn: Connection, *, path: str, tests: bool) -> ErrorEvent | None:
        """Start ``python path`` (or the tests) for ``conn``; the error to tell it otherwise."""
        if self._running is not None:
            return ErrorEvent(ErrorCode.RUN_BUSY, "a run is going on in this workspace: stop it first")
        files = self._texts()
        if not tests:
            try:
                path = clean_path(path, max_length=self._settings.limits.max_path_length)
            except BadPath as exc:
                return ErrorEvent(ErrorCode.BAD_PATH, f"cannot run {path[:80]!r}: {exc}", ref="run")
            if path not in files:
                return ErrorEvent(ErrorCode.BAD_PATH, f"there is no file {path[:80]!r} to run", ref="run")
        run_id = uuid.uuid4().hex
        started = RunStarted(run=run_id, path="" if tests else path, tests=tests, by=conn.username)
        run = self._running = _Running(run_id, started)
        self._announce(started)
        record = RunRecord(run=run.id, session=conn.session, author_id=conn.user_id, path=path, tests=tests)
        self._records.put(f"run {run.id}", lambda: self._store.run_started(record))
        task = self._background.spawn(self._settings.runner.start(
            run.id, files, path="" if tests else path, tests=tests, on_message=self._on_message,
        ))
        task.add_done_callback(self._started)
        return None

    def _started(self, task: asyncio.Future[Any]) -> None:
        if task.cancelled() or task.exception() is None or self._running is None:
            return
        log.error("a run could not start", exc_info=task.exception())
        self._on_message(run_refused(self._running.id, "the run could not be started (the server's log says why)"))

    def send_input(self, run: str, text: str) -> ErrorEvent | None:
        """``text`` to the program's stdin, and to everyone as it was typed (stream "stdin")."""
        if self._running is None or self._running.id != run:
            return ErrorEvent(ErrorCode.NO_SUCH_RUN, "that run is not going on", ref=run[:64])
        self._settings.runner.send_input(run, text)
        self._announce(RunOutput(run=run, stream="stdin", text=text))
        return None

    def stop(self, run: str) -> ErrorEvent | None:
        if self._running is None or self._running.id != run:
            return ErrorEvent(ErrorCode.NO_SUCH_RUN, "that run is not going on", ref=run[:64])
        self._settings.runner.stop(run)
        return None

    def _on_message(self, message: RunMessage) -> None:
        running = self._running
        if running is None or message.run != running.id:
            return  # a late message of a run that has ended
        if isinstance(message, RunOutput):
            if running.kept < KEPT_OUTPUT_CHARS:
                running.output.append(message.text[: KEPT_OUTPUT_CHARS - running.kept])
                running.kept += len(running.output[-1])
            self._announce(message)
            return
        self._finish(running, message)

    def _finish(self, running: _Running, finished: RunFinished) -> None:
        """Tell everyone how the run ended and record it (its output as kept)."""
        self._running = None
        self._announce(finished)
        outcome = RunOutcome(
            run=running.id, status=finished.status, exit_code=finished.exit_code,
            duration_ms=finished.duration_ms, output="".join(running.output), message=finished.message,
        )
        self._records.put(f"run {running.id} end", lambda: self._store.run_finished(outcome))
