"""Code runs in the room: a participant runs a file or the tests on the files as the live
document holds them (not as stored), everyone sees the output live, stdin and Stop work,
one run at a time, viewers cannot run, and each run is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from pycrdt import Map, Text, create_update_message

from spark_ide.pairing.models import Participant, Run
from tests.pairing.conftest import Live, LiveClient, connect, token_for

pytestmark = [pytest.mark.django_db(transaction=True)]

ECHO = 'name = input("name? ")\nprint("hello", name)\nimport sys\nprint("to stderr", file=sys.stderr)\n'
FOREVER = "while True:\n    pass\n"
TESTS = "def test_adds():\n    assert 1 + 1 == 2\n"


@pytest.fixture(autouse=True)
def eager(settings: Any) -> None:
    """The room's runs on eager Celery (the embedded default) in both test passes; a real
    worker over Redis is tested with the task itself (tests/sandbox/test_tasks.py)."""
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
