"""The security watchdog in a live room (issue 15), through the session socket with our model
server: a turn that writes SQL built with an f-string is halted within that statement, the
block is rolled back, the model is re-prompted with the finding, and the file ends up using
parameters; a model that repeats the flaw is stopped after two corrections; people's code is
flagged (diagnostics), never halted; a run with a high-severity finding asks first."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engine import CancelToken, Job, Message, Output, Tally
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import ROOMS
from tests.pairing.conftest import Live, connect, point_the_ide_at, say
from tests.support.recording_engine import RecordingEngine

pytestmark = [pytest.mark.django_db(transaction=True)]

VULNERABLE = (
    '<write path="users.py">\n'
    "import sqlite3\n"
    "\n"
    "\n"
    "def find(cursor, name):\n"
    "    cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
    "    return cursor.fetchall()\n"
    "\n"
    "\n"
    "def count(cursor):\n"
    '    cursor.execute("SELECT count(*) FROM users")\n'
    "    return cursor.fetchone()[0]\n"
    "</write>\n"
)
FIXED = (
    "Using a query parameter instead.\n"
    '<write path="users.py">\n'
    "import sqlite3\n"
    "\n"
    "\n"
    "def find(cursor, name):\n"
    '    cursor.execute("SELECT * FROM users WHERE name = ?", (name,))\n'
    "    return cursor.fetchall()\n"
    "</write>\n"
)


class Corrector(RecordingEngine):
    """Our scripted engine, answering the watchdog's re-prompt with ``fix`` (a model that
    learns) — or, with ``fix=None``, with the same flaw again (a model that does not)."""

    def __init__(self, fix: str | None) -> None:
        super().__init__(tokens_per_s=400.0, ttft_s=0.005)
        self.fix = fix
        self.requests: list[str] = []

    async def generate(self, job: Job, tally: Tally, cancel: CancelToken) -> AsyncGenerator[Output, None]:
        request = job.last_user_text()
        self.requests.append(request)
        if "security watchdog stopped you" in request:
            job = _with_text(job, self.fix if self.fix is not None else VULNERABLE)
        async for piece in super().generate(job, tally, cancel):
            yield piece


def _history_html(live: Live) -> str:
    from django.test import Client

    browser = Client()
    browser.force_login(live.owner)
    return browser.get(f"/sessions/{live.session_id}/history").content.decode()


def _with_text(job: Job, text: str) -> Job:
    """The same job, asking the scripted engine for ``text``."""
    return dataclasses.replace(job, messages=(*job.messages, Message(role="user", content=say(text, rate=400))))


@pytest.fixture
async def corrector(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Corrector]:
    engine = Corrector(getattr(request, "param", FIXED))
    async with ModelServer(engine, ServerConfig(port=0)) as server:
        point_the_ide_at(server, monkeypatch)
        yield engine


async def test_a_turn_writing_sql_with_an_f_string_is_halted_and_corrected(live: Live, corrector: Corrector) -> None:
    client = await connect(live)
    try:
        # At 100 tokens/s the room must fall some 90 ms behind (a loaded CI machine) before one
        # step carries the flaw's line and the next function together; at 400 it took 70 ms.
        await client.send({"type": "prompt", "text": say(VULNERABLE, rate=100)})
        halted = await client.until(lambda e: e["type"] == "guard.finding" and e["action"] == "halted")
        first = halted["turn"]
        assert halted["rule"] == "sql-format" and halted["severity"] == "high"
        assert halted["path"] == "users.py" and halted["line"] == 5
        correction = halted["correction"]
        ended = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == first)
        assert ended["status"] == "steered" and ended["reason"] == "guard_halt" and ended["by"] == "watchdog"
        # Halted within the statement: nothing after the execute line was ever sent to the file.
        deltas = "".join(e["text"] for e in client.of("turn.delta", first))
        streamed = [e for e in client.of("edit.status", first) if e["path"] == "users.py"]
        assert streamed[-1]["state"] == "rolled_back"
        assert "def count" not in deltas, "the model's answer was read past the halting statement"
        started = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] == correction)
        assert started["steered_from"] == first and started["author"] == "watchdog"
        assert "users.py line 5" in started["prompt"] and "parameters" in started["prompt"]
        done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == correction)
        assert done["status"] == "completed", done
        await client.until_true(lambda: "?" in (client.text("users.py") or ""))
        text = client.text("users.py") or ""
        assert '"SELECT * FROM users WHERE name = ?", (name,)' in text and "{name}" not in text
        assert "security watchdog stopped you" in corrector.requests[-1]
        assert "def find" in corrector.requests[-1]  # the finding names the line; the request carries it
        # The history shows the halt (the record is written in the background: wait for it).
        history = ""
        for _ in range(50):
            history = await database_sync_to_async(_history_html)(live)
            if "halted by the watchdog" in history:
                break
            await asyncio.sleep(0.1)
        assert "halted by the watchdog" in history
    finally:
        await client.close()
        await ROOMS.close_all()


@pytest.mark.parametrize("corrector", [None], indirect=True)
async def test_a_model_that_repeats_the_flaw_is_stopped_after_two_corrections(
    live: Live, corrector: Corrector
) -> None:
    client = await connect(live)
    try:
        await client.send({"type": "prompt", "text": say(VULNERABLE, rate=400)})
        stopped = await client.until(
            lambda e: e["type"] == "turn.finished" and e["reason"] == "guard_halt" and e["status"] == "cancelled",
            timeout=20,
        )
        halts = [e for e in client.of("guard.finding") if e["action"] == "halted"]
        assert len(halts) == 2  # two corrections, then no third
        flagged = [e for e in client.of("guard.finding", stopped["turn"]) if e["action"] == "flagged"]
        assert flagged and flagged[0]["rule"] == "sql-format"
        assert "after 2 corrections" in stopped["error"]
        assert len([r for r in corrector.requests if "security watchdog stopped you" in r]) == 2
        assert "{name}" not in (client.text("users.py") or "")  # every vulnerable block was rolled back
    finally:
        await client.close()
        await ROOMS.close_all()


async def test_people_are_flagged_never_halted_and_a_run_asks_first(
    live: Live, corrector: Corrector, settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    client = await connect(live)
    try:
        await client.until_true(lambda: client.text("app.py") is not None)
        typed = "\nimport os\n\n\ndef clean(path):\n    os.system('rm -rf ' + path)\n"
        await client.type_text("util.py", len("X = 1\n"), typed)
        shown = await client.until(
            lambda e: e["type"] == "guard.diagnostics" and e["path"] == "util.py" and e["findings"]
        )
        assert [f["rule"] for f in shown["findings"]] == ["os-system"]
        assert shown["findings"][0]["line"] == 7 and shown["findings"][0]["severity"] == "high"
        assert not client.of("guard.finding") and not client.of("turn.started")  # flagged, nothing halted
        # A run now asks first, naming the finding; confirmed, it runs.
        await client.send({"type": "run", "path": "app.py"})
        asked = await client.until(lambda e: e["type"] == "error" and e["code"] == "run_needs_confirmation")
        assert "util.py line 7" in asked["message"] and asked["ref"]["path"] == "app.py"
        await client.send({"type": "run", "path": "app.py", "confirm": True})
        await client.until(lambda e: e["type"] == "run.started", timeout=20)
        finished = await client.until(lambda e: e["type"] == "run.finished", timeout=30)
        assert finished["status"] in ("ok", "failed")
        # A late joiner gets the diagnostics as they stand.
        late = await connect(live)
        try:
            await late.until(lambda e: e["type"] == "guard.diagnostics" and e["path"] == "util.py")
        finally:
            await late.close()
    finally:
        await client.close()
        await ROOMS.close_all()


async def test_in_flag_mode_the_same_turn_is_flagged_not_halted(live: Live, corrector: Corrector) -> None:
    from channels.db import database_sync_to_async

    from spark_ide.workspaces.models import Workspace

    await database_sync_to_async(Workspace.objects.filter(pk=live.workspace_id).update)(guard_mode="flag")
    client = await connect(live)
    try:
        await client.send({"type": "prompt", "text": say(VULNERABLE, rate=2000)})
        done = await client.until(lambda e: e["type"] == "turn.finished")
        assert done["status"] == "completed"
        findings = client.of("guard.finding", done["turn"])
        assert [(f["rule"], f["action"], f["line"]) for f in findings][:1] == [("sql-format", "flagged", 5)]
        assert len(corrector.requests) == 1  # no correction turn
        assert "{name}" in (client.text("users.py") or "")  # flagged: the code stays, marked
        await client.until(lambda e: e["type"] == "guard.diagnostics" and e["path"] == "users.py" and e["findings"])
    finally:
        await client.close()
        await ROOMS.close_all()


async def test_a_flaw_on_the_blocks_last_line_is_halted_before_the_block_ends(
    live: Live, corrector: Corrector
) -> None:
    """At high rates one delta carries many lines, the flaw's and the block's end together:
    the flaw is still caught before the block is applied."""
    last = (
        '<write path="users.py">\n'
        "def find(cursor, name):\n"
        "    cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
        "</write>\n"
        "Done.\n"
    )
    await _halted_before_the_block_ends(live, last, line=2)


async def _halted_before_the_block_ends(live: Live, answer: str, *, line: int) -> None:
    """``answer`` streamed far faster than the room applies it: its SQL flaw at ``line`` halts
    the turn before its block is applied, and the correction turn writes parameters."""
    client = await connect(live)
    try:
        await client.send({"type": "prompt", "text": f"[rate:500000][say]{answer}[/say]"})
        halted = await client.until(lambda e: e["type"] == "guard.finding" and e["action"] == "halted")
        assert halted["rule"] == "sql-format" and halted["line"] == line
        await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == halted["turn"])
        statuses = [e["state"] for e in client.of("edit.status", halted["turn"])]
        assert "applied" not in statuses and statuses[-1] == "rolled_back"
        done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == halted["correction"])
        assert done["status"] == "completed"
        await client.until_true(lambda: "(name,)" in (client.text("users.py") or ""))
    finally:
        await client.close()
        await ROOMS.close_all()


async def test_a_flaw_deep_in_a_long_block_at_a_saturating_rate_is_halted_before_the_block_ends(
    live: Live, corrector: Corrector
) -> None:
    """A stream far faster than the room: the watchdog reads the code in held batches (not
    delta by delta), yet reads all of it before the block's end applies it."""
    body = "".join(f"def handler_{n}(request):\n    return request.get('v{n}')\n\n" for n in range(120))
    flaw = "def find(cursor, name):\n    cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"
    answer = f'<write path="users.py">\n{body}{flaw}' + "def last():\n    return 1\n</write>\nDone.\n"
    await _halted_before_the_block_ends(live, answer, line=body.count("\n") + 2)


async def test_a_room_opening_starts_the_scan_process_before_any_code_is_written(
    live: Live, rooms: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scan process starts when a room with the watchdog on opens, not under the first
    stream that writes code (its start held every room's stream a moment)."""
    from spark_ide.live import scan_process

    monkeypatch.setattr(scan_process, "_pool", None)  # as in a process that never scanned
    client = await connect(live)
    started = scan_process._pool
    assert started is not None
    await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(started, scan_process._ready), 30)  # it answers
    await client.close()
    started.shutdown(wait=False)
