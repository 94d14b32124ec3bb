"""A real Celery worker of the project (``celery -A spark_ide worker``), on a queue of its own
in a Redis of the test's choosing, for the tests that go through the broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    queue: str
    process: subprocess.Popen[bytes]
    output: bytes = b""  # what it printed, once it has stopped


def new_queue() -> str:
    return f"spark-test-{uuid.uuid4().hex[:12]}"


def forget_queue(redis_url: str, queue: str) -> None:
    """Delete a test queue from the broker: its messages and kombu's bindings of it."""
    with redis.Redis.from_url(redis_url) as keys:
        keys.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")


@contextmanager
def celery_worker(redis_url: str, *, queue: str | None = None) -> Iterator[Worker]:
    """One worker process (one pool process) consuming only ``queue`` (a new one by default);
    stopped, the queue's keys deleted and its output kept in ``Worker.output`` on the way out.
    The worker's settings are the project's with ``REDIS_URL`` = ``redis_url`` (its broker and
    channel layer)."""
    queue = queue or new_queue()
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "spark_ide.settings", "CI": "",
                   "PYTHONDONTWRITEBYTECODE": "1", "REDIS_URL": redis_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "spark_ide", "worker", "-Q", queue, "-n", f"{queue}@%h", "-c", "1",
         "--pool", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    worker = Worker(queue, process)
    try:
        yield worker
    finally:
        forget_queue(redis_url, queue)
        process.terminate()  # a warm shutdown: the task it runs (sending its last messages) ends first
        try:
            worker.output = process.communicate(timeout=15)[0]
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            worker.output = process.communicate()[0]
