"""Code runs in the room: a participant runs a file or the tests on the files as the live
document holds them (not as stored), everyone sees the output live, stdin and Stop work,
one run at a time, viewers cannot run, and each run is recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from channels.db import database_sync_to_async
from pycrdt import Map, Text, create_update_message

from spark_ide.celery import app as celery_app
from spark_ide.guard import GuardMode
from spark_ide.pairing.models import Participant, Run
from spark_ide.workspaces.models import Workspace
from tests.pairing.conftest import Live, LiveClient, connect, token_for
from tests.support.celery_worker import celery_worker, forget_queue, new_queue
from tests.support.waits import eventually

# The services pass runs it again: each run's record, stored; and once through the real broker.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

ECHO = 'name = input("name? ")\nprint("hello", name)\nimport sys\nprint("to stderr", file=sys.stderr)\n'
FOREVER = "while True:\n    pass\n"
TESTS = "def test_adds():\n    assert 1 + 1 == 2\n"


@pytest.fixture(autouse=True)
def eager(settings: Any) -> None:
    """The room's runs on eager Celery (the embedded default) in both test passes, but for the
    services pass's run through the broker (below); the task itself on a real worker over
    Redis: tests/sandbox/test_tasks.py."""
    settings.CELERY_TASK_ALWAYS_EAGER = True


async def _viewer(live: Live) -> LiveClient:
    def make() -> Any:
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_user(username="vic", password="pw-vic-123")
        Participant.objects.create(session_id=live.session_id, user=user, role="viewer")
        return user

    return await connect(live, await token_for(await database_sync_to_async(make)()))


async def _add_file(client: LiveClient, path: str, text: str) -> None:
    """A new file, as a person's editor makes one (a Yjs update)."""
    files = client.doc.get("files", type=Map)
    before = client.doc.get_state()
    with client.doc.transaction():
        files[path] = Text(text)
    await client.comm.send_to(bytes_data=create_update_message(client.doc.get_update(before)))
    await client.until_true(lambda: client.text(path) == text)


def _output(client: LiveClient, run: str, stream: str) -> str:
    return "".join(e["text"] for e in client.of("run.output") if e["run"] == run and e["stream"] == stream)


async def test_a_run_streams_to_everyone_reads_stdin_and_is_recorded(live: Live, rooms: None) -> None:
    owner = await connect(live)
    viewer = await _viewer(live)
    await owner.send({"type": "run", "path": "util.py"})
    first = await owner.until(lambda e: e["type"] == "run.finished")
    assert first["status"] == "ok" and first["exit_code"] == 0 and first["sandboxed"] is True

    await _add_file(owner, "echo.py", ECHO)  # typed, not saved: the live document is what runs
    await owner.send({"type": "run", "path": "echo.py"})
    started = await viewer.until(lambda e: e["type"] == "run.started" and e["path"] == "echo.py")
    run = started["run"]
    assert started["by"] == "ada" and started["tests"] is False
    await owner.until(lambda e: e["type"] == "run.output" and "name?" in e["text"])
    await owner.send({"type": "run.input", "run": run, "text": "Ada\n"})
    for client in (owner, viewer):
        done = await client.until(lambda e: e["type"] == "run.finished" and e["run"] == run)
        assert done["status"] == "ok" and done["exit_code"] == 0
        assert "hello Ada" in _output(client, run, "stdout")
        assert _output(client, run, "stdin") == "Ada\n"  # everyone sees what was typed
        assert _output(client, run, "stderr") == "to stderr\n"
    record = await database_sync_to_async(Run.objects.get)(pk=run)
    assert record.status == "ok" and record.path == "echo.py" and "hello Ada" in record.output
    await owner.close()
    await viewer.close()


async def test_stop_one_run_at_a_time_and_who_may_run(live: Live, rooms: None) -> None:
    owner = await connect(live)
    viewer = await _viewer(live)
    await owner.type_text("util.py", 0, FOREVER)
    await viewer.send({"type": "run", "path": "util.py"})
    refused = await viewer.until(lambda e: e["type"] == "error")
    assert refused["code"] == "forbidden"
    await viewer.send({"type": "run_input", "run": "x", "text": "sneaky\n"})  # not a way around the roles
    unknown = await viewer.until(lambda e: e["type"] == "error" and e["code"] != "forbidden")
    assert unknown["code"] == "unknown_type"

    await owner.send({"type": "run", "path": "util.py"})
    run = (await owner.until(lambda e: e["type"] == "run.started"))["run"]
    await owner.send({"type": "run", "path": "app.py"})
    busy = await owner.until(lambda e: e["type"] == "error")
    assert busy["code"] == "run_busy"
    late = await connect(live)  # joins while it runs: told of the run
    assert (await late.until(lambda e: e["type"] == "run.started"))["run"] == run
    await late.close()
    await owner.send({"type": "run.stop", "run": run})
    done = await viewer.until(lambda e: e["type"] == "run.finished" and e["run"] == run)
    assert done["status"] == "killed" and done["exit_code"] is None

    await owner.send({"type": "run.stop", "run": run})  # over already
    gone = await owner.until(lambda e: e["type"] == "error" and e["code"] == "no_such_run")
    assert gone["ref"] == run
    for bad, code in (({"path": "nope.py"}, "bad_path"), ({"path": "../etc/passwd"}, "bad_path"),
                      ({"tests": "yes"}, "bad_field"), ({}, "missing_field")):
        count = len(owner.of("error"))
        await owner.send({"type": "run", **bad})
        error = await owner.until(lambda e, n=count: e["type"] == "error" and len(owner.of("error")) > n)
        assert error["code"] == code, (bad, error)
    await owner.close()
    await viewer.close()


async def test_the_workspace_tests_run_with_pytest(live: Live, rooms: None) -> None:
    owner = await connect(live)
    await _add_file(owner, "test_math.py", TESTS)
    await owner.send({"type": "run", "tests": True})
    started = await owner.until(lambda e: e["type"] == "run.started")
    assert started["tests"] is True and started["path"] == ""
    done = await owner.until(lambda e: e["type"] == "run.finished", timeout=20)
    assert done["status"] == "ok", _output(owner, started["run"], "stdout")
    assert "1 passed" in _output(owner, started["run"], "stdout")
    await owner.close()


@pytest.mark.services(only=True)
async def test_a_run_goes_through_the_redis_broker_to_a_worker_and_back(
    live: Live, rooms: None, settings: Any
) -> None:
    """As in production with ``REDIS_URL``: the room publishes the task to the broker, where it
    waits for a worker; a worker of the project runs it and streams it back through the Redis
    channel layer, and what is typed reaches it through the run control in Redis."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    # The watchdog's full scan would go to the broker too, at a moment of its own (after the
    # file is typed), and could outlive the worker: off here (tests/sandbox/test_tasks.py runs
    # that task on a real worker).
    await database_sync_to_async(Workspace.objects.filter(pk=live.workspace_id).update)(guard_mode=GuardMode.OFF)
    default_queue, queue = celery_app.conf.task_default_queue, new_queue()
    celery_app.conf.task_default_queue = queue  # the room's tasks go to this test's queue alone
    broker = redis.Redis.from_url(settings.REDIS_URL)
    task: str | None = None
    try:
        owner = await connect(live)
        await _add_file(owner, "echo.py", ECHO)
        await owner.send({"type": "run", "path": "echo.py"})
        run = (await owner.until(lambda e: e["type"] == "run.started"))["run"]
        await eventually(lambda: broker.llen(queue) == 1)  # published, and nobody runs it yet
        message = json.loads(broker.lindex(queue, 0) or b"{}")
        assert message["headers"]["task"] == "spark_ide.sandbox.run_code"
        task = message["headers"]["id"]
        with celery_worker(settings.REDIS_URL, queue=queue) as worker:
            await owner.until(lambda e: e["type"] == "run.output" and "name?" in e["text"], timeout=60)
            await owner.send({"type": "run.input", "run": run, "text": "Ada\n"})
            done = await owner.until(lambda e: e["type"] == "run.finished" and e["run"] == run, timeout=30)
            assert worker.process.poll() is None  # the worker is still up
        assert b"Traceback" not in worker.output, worker.output.decode(errors="replace")
    finally:
        celery_app.conf.task_default_queue = default_queue
        forget_queue(settings.REDIS_URL, queue)
        if task is not None:
            broker.delete(f"celery-task-meta-{task}")  # the worker stored its result
        broker.close()
    assert done["status"] == "ok" and done["sandboxed"] is True
    assert "hello Ada" in _output(owner, run, "stdout") and _output(owner, run, "stderr") == "to stderr\n"
    record = await database_sync_to_async(Run.objects.get)(pk=run)
    assert record.status == "ok" and "hello Ada" in record.output
    await owner.close()
