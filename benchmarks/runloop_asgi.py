"""The IDE's ASGI application for the run-loop benchmark (``benchmarks.runloop``): the IDE as it
ships, with notes of the moments each run's end is produced and reaches the room.

* ``sandbox``: the sandbox's task (``spark_ide.sandbox.tasks.run_code``) turns the sandbox's
  result into the run's ``run.finished`` with ``tasks.finished``, in the thread that ran it,
  right after the program ended and the sandbox tore the run down, before the event goes
  anywhere: the run's end as it is produced.
* ``room``: the room takes that ``run.finished`` (``live.runs.RoomRuns._finish``, on the event
  loop, after the channel layer brought it): it tells the pages, then answers the model's
  waiting call.

Each is appended as ``<run id> <sandbox|room> <time.monotonic()>`` to the file
``SPARK_BENCH_RUN_ENDS`` (one small ``write``, a few microseconds, after the moment is taken
and before anything waits on it runs). ``CLOCK_MONOTONIC`` is one clock for every process of
the machine, so the benchmark reads these beside the times its frame tap and its page took.
"""

from __future__ import annotations

import os
import time
from typing import Any

from spark_ide.asgi import application
from spark_ide.live.runs import RoomRuns
from spark_ide.sandbox import tasks

__all__ = ["application"]

_ENDS = os.open(os.environ["SPARK_BENCH_RUN_ENDS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
_task_finished = tasks.finished
_room_finish = RoomRuns._finish


def _note(run: str, where: str, at: float) -> None:
    os.write(_ENDS, f"{run} {where} {at:.6f}\n".encode())


def _produced(run: str, result: Any) -> Any:
    at = time.monotonic()
    end = _task_finished(run, result)
    _note(run, "sandbox", at)
    return end


def _taken(self: RoomRuns, running: Any, finished: Any) -> None:
    at = time.monotonic()
    _room_finish(self, running, finished)  # what waits on it runs after this returns, on the loop
    _note(finished.run, "room", at)


tasks.finished = _produced
RoomRuns._finish = _taken  # type: ignore[method-assign]
