"""How a run ended: the statuses (one list, for the task, the room and the browser) and the result."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import StrEnum

from spark_ide.sandbox.core.limits import MB, Limits


class RunStatus(StrEnum):
    OK = "ok"  # exited with 0
    FAILED = "failed"  # exited with another code, or was ended by a signal of its own doing
    TIMEOUT = "timeout"  # the wall-clock or the CPU limit
    KILLED = "killed"  # stopped by a participant
    OUTPUT_TRUNCATED = "output_truncated"  # wrote more than the output limit, and was stopped


STREAMS = ("stdout", "stderr")


@dataclass(frozen=True)
class RunResult:
    """``exit_code`` is None when the sandbox ended the run (timeout, Stop, output cap)."""

    status: RunStatus
    exit_code: int | None
    duration_ms: int
    truncated: bool
    message: str
    sandboxed: bool
    uid: int
    stdout: str
    stderr: str


# What a student's traceback says when a limit (not a bug) stopped the program.
LIMIT_HINTS = (
    ("MemoryError", "the program ran out of memory (limit: {memory} MB per process)"),
    ("No space left on device", "the program filled its disk (limit: {disk} MB)"),
    ("File too large", "the program wrote a file over the size limit ({file} bytes)"),
    ("Resource temporarily unavailable", "the program hit a limit (at most {processes} processes)"),
    ("Too many open files", "the program opened too many files (limit: {open_files})"),
)


def exit_message(code: int, *, stderr_tail: str, limits: Limits) -> tuple[RunStatus, str]:
    """Status and message for a run that ended on its own with ``code`` (shell convention: 128 + signal)."""
    if code == 0:
        return RunStatus.OK, "exited with code 0"
    if code == 128 + signal.SIGXCPU:
        return RunStatus.TIMEOUT, f"stopped: the CPU time limit of {limits.cpu_seconds} s was reached"
    if code > 128 and code - 128 in signal.valid_signals():
        message = f"ended by signal {signal.Signals(code - 128).name}"
    else:
        message = f"exited with code {code}"
    values = {
        "memory": limits.memory_bytes // MB, "disk": limits.disk_bytes // MB, "file": limits.file_bytes,
        "processes": limits.processes, "open_files": limits.open_files,
    }
    for marker, hint in LIMIT_HINTS:
        if marker in stderr_tail:
            return RunStatus.FAILED, f"{message}: {hint.format(**values)}"
    return RunStatus.FAILED, message


def kill_message(status: RunStatus, *, limits: Limits) -> str:
    """The message of a run the sandbox ended."""
    if status is RunStatus.TIMEOUT:
        return f"stopped: still running after the time limit of {limits.wall_seconds:g} s"
    if status is RunStatus.OUTPUT_TRUNCATED:
        return f"stopped: the output passed the limit of {limits.output_bytes} bytes"
    return "stopped by a participant"
