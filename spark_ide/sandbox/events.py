"""The channel-layer messages of a run (``run.output``, ``run.finished``), typed in one place.

They go to the group named in the task's arguments; the room turns them into the session
events of the same names (PROTOCOL.md §2). A run that could not start (sandbox unavailable,
bad request, no free uid) ends at once with ``run.finished``: status ``failed``, no exit code,
and ``error`` naming why.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from spark_ide.sandbox.core import RunResult, RunStatus

StartError = Literal["sandbox_unavailable", "bad_run", "sandbox_busy"]


class RunOutput(TypedDict):
    type: Literal["run.output"]
    run: str
    stream: str  # "stdout" | "stderr"
    text: str


class RunFinished(TypedDict):
    type: Literal["run.finished"]
    run: str
    exit_code: int | None  # None when the sandbox ended the run (timeout, Stop, output cap) or it never started
    duration_ms: int
    status: str  # a RunStatus
    truncated: bool
    message: str  # for people: why it ended, which limit was hit
    sandboxed: bool
    error: NotRequired[StartError]


def run_output(run: str, stream: str, text: str) -> RunOutput:
    return {"type": "run.output", "run": run, "stream": stream, "text": text}


def run_finished(run: str, result: RunResult) -> RunFinished:
    return {
        "type": "run.finished", "run": run, "exit_code": result.exit_code, "duration_ms": result.duration_ms,
        "status": result.status.value, "truncated": result.truncated, "message": result.message,
        "sandboxed": result.sandboxed,
    }


def run_refused(run: str, error: StartError, message: str) -> RunFinished:
    return {
        "type": "run.finished", "run": run, "exit_code": None, "duration_ms": 0, "status": RunStatus.FAILED.value,
        "truncated": False, "message": message, "sandboxed": False, "error": error,
    }
