"""Stdin and Stop for a run, from the process that serves the room to the one that runs it.

With Redis (``REDIS_URL``: real Celery workers, maybe on another machine) the commands go
through a Redis list per run, which the run's task watches with ``BLPOP``: a command sent
before the task has started waits in the list (a Stop then ends the run as soon as it
starts); the list expires an hour after its last command. Without Redis (the embedded
default: eager Celery in the server's own process) they go straight to the running `Run`,
through a registry in this process.

Celery's ``revoke(terminate=True)`` was not used: it does nothing for an eager task, cannot
carry stdin, and kills the worker's pool process instead of the run.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import redis
from django.conf import settings

from spark_ide.sandbox.core import BadRun, Run, RunInputError

Op = Literal["stdin", "eof", "stop"]
RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
KEY_TTL_S = 3600
POLL_S = 1.0  # BLPOP timeout: the watcher also wakes at once on every command and at the run's end
LOCAL_PENDING_S = 60.0  # a command for a run not (yet) in this process is kept this long


def checked_run_id(run: str) -> str:
    if not isinstance(run, str) or not RUN_ID.fullmatch(run):
        raise BadRun(f"bad run id {str(run)[:80]!r}: 1-64 letters, digits, '_' or '-'")
    return run


def apply(run: Run, op: str, text: str) -> None:
    """Carry out one command on a running run (a closed input is not an error: it is ignored)."""
    try:
        if op == "stdin":
            run.write_stdin(text)
        elif op == "eof":
            run.close_stdin()
        elif op == "stop":
            run.stop()
    except RunInputError:
        pass


class RedisRunControl:
    def __init__(self, url: str) -> None:
        self._url = url

    @staticmethod
    def key(run: str) -> str:
        return f"spark:sandbox:{checked_run_id(run)}:control"

    def send(self, run: str, op: Op, text: str = "") -> None:
        key = self.key(run)
        with redis.Redis.from_url(self._url) as client:
            client.pipeline().rpush(key, json.dumps({"op": op, "text": text})).expire(key, KEY_TTL_S).execute()

    @contextmanager
    def attach(self, run_id: str, run: Run) -> Iterator[None]:
        """Apply the run's commands while the ``with`` body (the run) lasts."""
        key = self.key(run_id)
        done = threading.Event()
        client = redis.Redis.from_url(self._url)

        def watch() -> None:
            while not done.is_set():
                item = client.blpop([key], timeout=POLL_S)
                if item is not None:
                    command = json.loads(item[1])
                    if command.get("op") == "end":
                        break
                    apply(run, str(command.get("op")), str(command.get("text", "")))

        watcher = threading.Thread(target=watch, name=f"run-control-{run_id}", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            with redis.Redis.from_url(self._url) as waker:
                waker.rpush(key, json.dumps({"op": "end"}))  # wakes the BLPOP now
                watcher.join(POLL_S + 1)
                waker.delete(key)
            client.close()


class LocalRunControl:
    """In one process: the registry of runs in progress, and commands waiting for their run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._pending: dict[str, list[tuple[float, str, str]]] = {}

    def send(self, run: str, op: Op, text: str = "") -> None:
        checked_run_id(run)
        with self._lock:
            target = self._runs.get(run)
            if target is None:
                now = time.monotonic()
                self._pending = {
                    key: kept for key, items in self._pending.items()
                    if (kept := [item for item in items if now - item[0] < LOCAL_PENDING_S])
                }
                self._pending.setdefault(run, []).append((now, op, text))
                return
        apply(target, op, text)

    @contextmanager
    def attach(self, run_id: str, run: Run) -> Iterator[None]:
        checked_run_id(run_id)
        with self._lock:
            self._runs[run_id] = run
            waiting = self._pending.pop(run_id, [])
        for _, op, text in waiting:
            apply(run, op, text)
        try:
            yield
        finally:
            with self._lock:
                self._runs.pop(run_id, None)


_local = LocalRunControl()


def run_control() -> RedisRunControl | LocalRunControl:
    """The control path of this deployment: Redis when there is one, else this process."""
    return RedisRunControl(settings.REDIS_URL) if settings.REDIS_URL else _local
