"""``live.store.Runner`` on the real sandbox core, each run waited on in a thread: the room's
runs without Celery or a channel layer (those are tested through the real socket in
tests/pairing). Messages reach the room on its loop, as the Celery runner delivers them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence

from spark_ide.live.events import RunError, RunFinished, RunOutput
from spark_ide.live.store import RunMessage
from spark_ide.sandbox.core import BadRun, NoFreeUid, Run, Sandbox, SandboxUnavailable


class SandboxRunner:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._stopped: set[str] = set()  # stopped before the sandbox had started them
        self.uids: dict[str, int] = {}  # each ended run's uid (to look for processes left)
        self.args: dict[str, tuple[str, ...]] = {}  # what each run was given

    async def start(
        self, run: str, files: Mapping[str, str], *, path: str, tests: bool, on_message: Callable[[RunMessage], None],
        args: Sequence[str] = (),
    ) -> None:
        loop = asyncio.get_running_loop()
        self.args[run] = tuple(args)

        def emit(message: RunMessage) -> None:
            loop.call_soon_threadsafe(on_message, message)

        def work() -> None:
            try:
                started = self._sandbox.start(
                    dict(files), path=path or None, tests=tests, args=args,
                    on_output=lambda stream, text: emit(RunOutput(run=run, stream=stream, text=text)),
                )
            except BadRun as exc:
                emit(RunFinished.refused(run, RunError.BAD_RUN, str(exc)))
                return
            except (SandboxUnavailable, NoFreeUid) as exc:
                emit(RunFinished.refused(run, RunError.SANDBOX_UNAVAILABLE, str(exc)))
                return
            with self._lock:
                self._runs[run] = started
                if run in self._stopped:
                    started.stop()
            result = started.wait()
            with self._lock:
                self._runs.pop(run, None)
            self.uids[run] = result.uid
            emit(RunFinished(
                run=run, exit_code=result.exit_code, duration_ms=result.duration_ms, status=result.status.value,
                truncated=result.truncated, message=result.message, sandboxed=result.sandboxed,
            ))

        threading.Thread(target=work, name=f"run-{run[:8]}", daemon=True).start()

    def send_input(self, run: str, text: str) -> None:
        with self._lock:
            started = self._runs.get(run)
        if started is not None:
            started.write_stdin(text)

    def stop(self, run: str) -> None:
        with self._lock:
            started = self._runs.get(run)
            if started is None:
                self._stopped.add(run)
        if started is not None:
            started.stop()
