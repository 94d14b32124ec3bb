"""The Celery task: eager in this process (the embedded default), and on a real worker over Redis."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from celery import Celery
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings

from spark_ide.sandbox.control import RedisRunControl, run_control
from spark_ide.sandbox.core import BadRun
from spark_ide.sandbox.tasks import run_code, run_limits
from tests.conftest import port_open, require
from tests.sandbox.conftest import source
from tests.support.celery_worker import celery_worker

REDIS = "redis://127.0.0.1:6379/6"
GREETER = source(
    "name = input('name? ')",
    "print('hello', name)",
    "import sys, time",
    "print('waiting', file=sys.stderr, flush=True)",
    "time.sleep(60)",
)


async def collect(layer: BaseChannelLayer, channel: str, *, on: dict[str, Any] | None = None,
                  timeout: float = 30) -> list[dict[str, Any]]:
    """Messages to ``channel`` up to ``run.finished``; ``on`` maps a text seen to a call to make then."""
    messages: list[dict[str, Any]] = []
    pending = dict(on or {})
    async with asyncio.timeout(timeout):
        while True:
            message = await layer.receive(channel)
            messages.append(message)
            for seen in list(pending):
                if seen in message.get("text", ""):
                    await sync_to_async(pending.pop(seen))()
            if message["type"] == "run.finished":
                return messages


def texts(messages: list[dict[str, Any]], stream: str) -> str:
    return "".join(m["text"] for m in messages if m["type"] == "run.output" and m["stream"] == stream)


def test_limits_from_a_task_can_only_be_lowered() -> None:
    assert run_limits({"wall_seconds": 2}).wall_seconds == 2
    assert run_limits({"wall_seconds": 10_000}).wall_seconds == settings.SPARK_SANDBOX_WALL_S
    with pytest.raises(BadRun, match="unknown sandbox limits: swap"):
        run_limits({"swap": 1})


@pytest.mark.services  # the channel layer and run control: Redis in the services pass
async def test_the_eager_task_streams_to_the_group_and_takes_stdin_and_stop() -> None:
    require(port_open("127.0.0.1", 6379) or not settings.REDIS_URL, "REDIS_URL is set but Redis is not running")
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    group = f"run-{uuid.uuid4().hex}"
    await layer.group_add(group, channel)
    run = uuid.uuid4().hex
    control = run_control()
    control.send(run, "stdin", "Ada\n")  # typed before the run started: kept for it
    task = asyncio.ensure_future(sync_to_async(run_code.apply, thread_sensitive=False)(
        kwargs={"run": run, "group": group, "files": GREETER, "path": "main.py", "limits": {"wall_seconds": 10}}))
    messages = await collect(layer, channel, on={"waiting": lambda: control.send(run, "stop")})
    finished = (await task).get()
    assert texts(messages, "stdout") == "name? hello Ada\n"
    assert texts(messages, "stderr") == "waiting\n"
    assert messages[-1] == finished
    assert finished["type"] == "run.finished" and finished["run"] == run
    assert finished["status"] == "killed" and finished["exit_code"] is None and finished["truncated"] is False
    assert finished["message"] == "stopped by a participant" and finished["sandboxed"] is True
    assert all(m["run"] == run for m in messages)


@pytest.mark.services  # the channel layer: Redis in the services pass
async def test_the_task_passes_a_runs_arguments_as_json_and_refuses_bad_ones() -> None:
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    group = f"run-{uuid.uuid4().hex}"
    await layer.group_add(group, channel)
    files = {"main.py": "import sys\nprint(sys.argv[1:])\n"}
    await sync_to_async(run_code.apply, thread_sensitive=False)(
        kwargs={"run": "r1", "group": group, "files": files, "path": "main.py", "args": ["a b", "-x"]})
    messages = await collect(layer, channel)
    assert texts(messages, "stdout") == "['a b', '-x']\n" and messages[-1]["status"] == "ok"
    await sync_to_async(run_code.apply, thread_sensitive=False)(
        kwargs={"run": "r2", "group": group, "files": files, "path": "main.py", "args": ["a\x00"]})
    (refused,) = await collect(layer, channel)
    assert refused["error"] == "bad_run" and refused["message"] == "an argument contains a NUL character"


@pytest.mark.services  # the channel layer: Redis in the services pass
async def test_a_run_that_cannot_start_finishes_at_once_with_the_reason() -> None:
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    group = f"run-{uuid.uuid4().hex}"
    await layer.group_add(group, channel)
    await sync_to_async(run_code.apply, thread_sensitive=False)(
        kwargs={"run": "r1", "group": group, "files": {"main.py": ""}, "path": "missing.py"})
    messages = await collect(layer, channel, timeout=10)
    assert messages == [{
        "type": "run.finished", "run": "r1", "exit_code": None, "duration_ms": 0, "status": "failed",
        "truncated": False, "message": "there is no file 'missing.py' in the workspace", "sandboxed": False,
        "error": "bad_run",
    }]


async def test_a_real_worker_runs_it_over_redis() -> None:
    require(port_open("127.0.0.1", 6379), "Redis is not running on 127.0.0.1:6379")
    from channels_redis.pubsub import RedisPubSubChannelLayer

    with celery_worker(REDIS) as worker:
        await _runs_on(worker.queue, worker.process, RedisPubSubChannelLayer(hosts=[REDIS]))
    assert b"Traceback" not in worker.output, worker.output.decode(errors="replace")


async def _runs_on(queue: str, worker: subprocess.Popen[bytes], layer: Any) -> None:
    """A run with stdin and Stop, hostile runs, a fine run and the watchdog's scan, sent to
    ``worker``'s queue; their messages come through ``layer`` (Redis pub/sub)."""
    client = Celery("sandbox-test", broker=REDIS, backend=REDIS)
    client.conf.update(task_serializer="json", accept_content=["json"], result_serializer="json")
    try:
        channel = await layer.new_channel()
        group = f"run-{uuid.uuid4().hex}"
        await layer.group_add(group, channel)
        run = uuid.uuid4().hex
        control = RedisRunControl(REDIS)
        control.send(run, "stdin", "Grace\n")  # waits in Redis until the worker starts the run
        sent = client.send_task("spark_ide.sandbox.run_code", queue=queue, kwargs={
            "run": run, "group": group, "files": GREETER, "path": "main.py", "limits": {"wall_seconds": 10}})
        messages = await collect(layer, channel, on={"waiting": lambda: control.send(run, "stop")}, timeout=60)
        finished = await sync_to_async(sent.get)(timeout=10)
        assert texts(messages, "stdout") == "name? hello Grace\n"
        assert texts(messages, "stderr") == "waiting\n"
        assert finished["status"] == "killed" and finished["sandboxed"] is True
        assert messages[-1] == finished
        sent.forget()
        # Hostile runs on the same worker (one pool process): each is contained and reported,
        # and the worker still runs the next one.
        hostile = {
            "processes": source("import os", "while True:", "    os.fork()"),
            "ran out of memory": source("chunks = []", "while True:", "    chunks.append(b'x' * 10_000_000)"),
            "output passed": source("while True:", "    print('x' * 10_000)"),
        }
        for said, files in hostile.items():
            bomb = client.send_task("spark_ide.sandbox.run_code", queue=queue, kwargs={
                "run": uuid.uuid4().hex, "group": group, "files": files, "path": "main.py",
                "limits": {"wall_seconds": 5, "processes": 16}})
            ended = await sync_to_async(bomb.get)(timeout=30)
            assert ended["status"] in ("failed", "output_truncated") and said in ended["message"], ended
            bomb.forget()
        fine = client.send_task("spark_ide.sandbox.run_code", queue=queue, kwargs={
            "run": uuid.uuid4().hex, "group": group, "files": source("print('fine')"), "path": "main.py"})
        assert (await sync_to_async(fine.get)(timeout=30))["status"] == "ok"
        fine.forget()
        # The watchdog's full scan after a turn is a task of the same workers (JSON in and out).
        scan = client.send_task("spark_ide.guard.full_scan", queue=queue, kwargs={
            "files": {"db.py": "def find(cur, name):\n    cur.execute(f'SELECT * FROM t WHERE n = {name}')\n"}})
        found = await sync_to_async(scan.get)(timeout=60)
        assert [(f["rule"], f["line"], f["severity"]) for f in found if f["rule"] == "sql-format"] == [
            ("sql-format", 2, "high")]
        scan.forget()
        assert worker.poll() is None  # the worker is still up
    finally:
        await layer.flush()
        client.close()
