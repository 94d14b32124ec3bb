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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from spark_ide.editing.paths import BadPath, clean_path
from spark_ide.guard import Finding

from .background import Background
from .events import ErrorCode, ErrorEvent, Event, RunFinished, RunOutput, RunStarted, TurnEvent, TurnRan
from .model_runs import RunResult
from .records import Records
from .run_command import RunCommand
from .store import LiveSettings, RoomStore, RunMessage, RunOutcome, RunRecord, run_refused
from .transport import Connection

log = logging.getLogger(__name__)

KEPT_OUTPUT_CHARS = 64_000  # of a run's output in its record (the sandbox caps it about there too)
ROOM_CLOSED = "stopped: the room closed while it ran"
# The end of a model's run is written this long after it is known: the model's next request
# goes out first (a write holds the GIL in the database thread while the loop builds it).
MODEL_RECORD_AFTER_S = 0.05


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
    ended: asyncio.Future[RunResult] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class RoomRuns:
    def __init__(
        self, *, store: RoomStore, settings: LiveSettings, texts: Callable[[], dict[str, str]],
        announce: Callable[[Event], None], publish: Callable[[TurnEvent], None],
    ) -> None:
        self._store = store
        self._publish = publish  # a model's run's line in its turn (``turn.ran``), kept in the event log
        self._settings = settings
        self._texts = texts
        self._announce = announce
        self._records = Records(settings.persist_retries)
        self._running: _Running | None = None
        self._background = Background()
        self._later: dict[str, tuple[asyncio.TimerHandle, Callable[[], Awaitable[None]]]] = {}  # run -> its end's write
        self._closing = False

    def start(self) -> None:
        self._records.start()

    async def close(self) -> None:
        """A run going on when the room closes (idle, shut down, moved to another process) is
        stopped and recorded as ended here: its own ``run.finished`` would come after the
        records are closed, to a room that no longer listens, and leave it ``running``."""
        self._closing = True
        running = self._running
        if running is not None:
            self._settings.runner.stop(running.id)
            self._finish(running, RunFinished(
                run=running.id, exit_code=None, duration_ms=round((time.monotonic() - running.began) * 1000),
                status="killed", truncated=False, message=ROOM_CLOSED, sandboxed=False,
            ))
        for run, (handle, write) in list(self._later.items()):
            handle.cancel()
            self._record_end(run, write)
        await self._records.close()

    @property
    def wait_s(self) -> float:
        """How long a model's run waits for another run to end (``LiveSettings.model_run_wait_s``)."""
        return self._settings.model_run_wait_s

    @property
    def running(self) -> str | None:
        return None if self._running is None else self._running.id

    @property
    def started(self) -> RunStarted | None:
        """The ``run.started`` of the run going on: a page that joins now is told it too."""
        return None if self._running is None else self._running.started

    def run(self, conn: Connection, *, path: str, tests: bool) -> ErrorEvent | None:
        """Start ``python path`` (or the tests) for ``conn``; the error to tell it otherwise."""
        running = self._running
        if running is not None:
            if running.started.model:
                return ErrorEvent(ErrorCode.RUN_BUSY, f"the model is running `{running.started.command}` in this "
                                  "workspace: wait for it to end, or stop it (Stop, or stop the model's turn)")
            return ErrorEvent(ErrorCode.RUN_BUSY, "a run is going on in this workspace: stop it first")
        files = self._texts()
        if not tests:
            try:
                path = clean_path(path, max_length=self._settings.limits.max_path_length)
            except BadPath as exc:
                return ErrorEvent(ErrorCode.BAD_PATH, f"cannot run {path[:80]!r}: {exc}", ref="run")
            if path not in files:
                return ErrorEvent(ErrorCode.BAD_PATH, f"there is no file {path[:80]!r} to run", ref="run")
        command = RunCommand.of_request(path=path, tests=tests)
        self._begin(command, files, by=conn.username, session=conn.session, author_id=conn.user_id)
        return None

    async def run_for_model(
        self, command: RunCommand, *, turn: str, by: str, session: str, author_id: int | None,
    ) -> RunResult | None:
        """Run ``command`` for the model's ``turn`` (the author's: ``by``) and wait for its
        end; None when another run went on all of ``model_run_wait_s`` (the room runs one at a
        time). Cancelled (a steer, stop or revert ends the turn): the run is stopped as by Stop."""
        deadline = time.monotonic() + self._settings.model_run_wait_s
        while self._running is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(asyncio.shield(self._running.ended), left)
            except TimeoutError:
                return None
        running = self._begin(command, self._texts(), by=by, session=session, author_id=author_id, turn=turn)
        try:
            return await asyncio.shield(running.ended)
        except asyncio.CancelledError:
            if self._running is running:
                self._settings.runner.stop(running.id)
            raise

    def _begin(
        self, command: RunCommand, files: dict[str, str], *, by: str, session: str, author_id: int | None,
        turn: str = "",
    ) -> _Running:
        """Start ``command`` on ``files`` (the room's, as they are now): tell everyone, record it."""
        run_id = uuid.uuid4().hex
        started = RunStarted(
            run=run_id, path=command.path, tests=command.tests, by=by, command=command.text, model=bool(turn),
            turn=turn,
        )
        run = self._running = _Running(run_id, started)
        self._announce(started)
        record = RunRecord(
            run=run.id, session=session, author_id=author_id, path=command.path, tests=command.tests,
            command=command.text, by_model=bool(turn), turn=turn,
        )
        self._records.put(f"run {run.id}", lambda: self._store.run_started(record))
        task = self._background.spawn(self._settings.runner.start(
            run.id, files, path=command.path, tests=command.tests, args=command.args,
            on_message=self._on_message,
        ))
        task.add_done_callback(self._started)
        return run

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
        started = running.started
        if started.model and started.turn:
            self._publish(TurnRan(
                turn=started.turn, run=running.id, command=started.command, status=finished.status,
                exit_code=finished.exit_code, error=finished.error, message=finished.message if finished.error else "",
            ))
        if not running.ended.done():
            running.ended.set_result(RunResult(finished, "".join(running.output)))
        outcome = RunOutcome(
            run=running.id, status=finished.status, exit_code=finished.exit_code,
            duration_ms=finished.duration_ms, output="".join(running.output), message=finished.message,
        )
        def write() -> Awaitable[None]:
            return self._store.run_finished(outcome)

        if running.started.model and not self._closing:
            handle = asyncio.get_running_loop().call_later(MODEL_RECORD_AFTER_S, self._record_end, running.id, write)
            self._later[running.id] = (handle, write)
        else:
            self._record_end(running.id, write)

    def _record_end(self, run: str, write: Callable[[], Awaitable[None]]) -> None:
        self._later.pop(run, None)
        self._records.put(f"run {run} end", write)
