"""The model runs code through the whole stack (issue 30): pages on a real Daphne process,
our model server in its OpenAI mode playing ``run`` and ``apply_patch`` calls, the IDE's own
sandbox runs on eager Celery (the embedded default), its request log holding every request
as it arrived.

A ``run`` call is a room run every participant sees, marked as the model's, recorded as such;
its report reaches the model as the call's output on the chain; a command outside the grammar
is refused unrun. Then a test round: the model's change leaves a test failing, the IDE runs
the tests, round 3 is asked to fix them, and the turn ends ``tests_passed``.

Marked ``processes``: it starts the IDE as a process of its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from benchmarks.pairing.stack import Stack
from spark_ide.modelserver.config import ServerConfig
from tests.support.peer import Peer
from tests.support.recording_engine import RecordingEngine, RecordingServer

pytestmark = pytest.mark.processes

KEY = "sk-test-openai-like"
MODEL = "gpt-5.3-codex"
APP = "import sys\n\n\ndef add(a, b):\n    return a - b\n\n\nif __name__ == '__main__':\n    print(add(2, 3))\n"
TESTS = "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def run(call_id: str, command: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "name": "run", "input": command, "call_id": call_id}


def patch(call_id: str, old: str, new: str) -> dict[str, Any]:
    text = f"*** Begin Patch\n*** Update File: app.py\n@@ def add(a, b):\n-    {old}\n+    {new}\n*** End Patch\n"
    return {"type": "custom_tool_call", "name": "apply_patch", "input": text, "call_id": call_id}


SCRIPTS = {
    "try": [["Trying it.", run("call_1", "python app.py"), run("call_2", "cat /etc/passwd")], "It prints -1."],
    "fix": [
        ["Fixing add.", patch("call_a", "return a - b", "return a * b")],
        "Done, I think.",
        ["Oops.", patch("call_b", "return a * b", "return a + b")],
        "Fixed.",
    ],
}


@pytest.fixture
async def upstream() -> AsyncIterator[RecordingServer]:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=400.0, ttft_s=0.005)
    config = ServerConfig(port=0, api_key=KEY, cancel_extension=False, model=MODEL)
    async with RecordingServer(engine, config) as server:
        yield server


@pytest.fixture
async def stack(upstream: RecordingServer) -> AsyncIterator[Stack]:
    model = {
        "SPARK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": MODEL,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream.port}/v1", "SPARK_EDIT_STYLE": "apply-patch",
    }
    async with Stack({}, relay=False, upstream=model) as running:
        yield running


def generated(upstream: RecordingServer) -> list[Any]:
    assert upstream.request_log is not None
    return [entry for entry in upstream.request_log.answered() if entry.body.get("generate", True)]


async def test_the_models_runs_are_the_rooms_and_answer_its_calls_then_a_test_round_fixes_a_failure(
    stack: Stack, upstream: RecordingServer,
) -> None:
    _, ws_url = await stack.session({"app.py": APP, "tests/test_app.py": TESTS})
    session_id = ws_url.rstrip("/").rsplit("/", 1)[1]
    tokens = await stack.participants([session_id], {"vic": "viewer"})
    driver, viewer = Peer("driver", stack.token), Peer("viewer", tokens["vic"])
    await driver.open(ws_url)
    await viewer.open(ws_url)

    await driver.send({"type": "prompt", "text": "[script:try]", "path": "app.py"})
    turn = (await driver.until(lambda e: e["type"] == "turn.started"))["turn"]
    done = await driver.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=60)
    assert done["status"] == "completed", done
    for peer in (driver, viewer):  # the run panel of every participant
        [started] = [e for e in peer.events if e["type"] == "run.started"]
        assert (started["model"], started["turn"], started["command"]) == (True, turn, "python app.py")
        output = "".join(e["text"] for e in peer.events if e["type"] == "run.output" and e["run"] == started["run"])
        assert output.strip() == "-1"
        [ended] = [e for e in peer.events if e["type"] == "run.finished"]
        assert (ended["status"], ended["exit_code"]) == ("ok", 0)

    first, second = generated(upstream)[:2]
    assert {"apply_patch", "run"} <= {tool.get("name") for tool in first.body["tools"]}
    assert second.body["previous_response_id"] == first.response_id
    ran, refused = second.tool_outputs()
    assert (ran["type"], ran["call_id"]) == ("custom_tool_call_output", "call_1")
    assert "$ python app.py" in ran["output"] and "exit code: 0" in ran["output"] and "-1" in ran["output"]
    assert refused["call_id"] == "call_2" and "'cat' is not a command the run tool knows" in refused["output"]

    await driver.send({"type": "prompt", "text": "[script:fix]", "path": "app.py"})
    fix = (await driver.until(lambda e: e["type"] == "turn.started" and e["turn"] != turn))["turn"]
    done = await driver.until(lambda e: e["type"] == "turn.finished" and e["turn"] == fix, timeout=90)
    assert (done["status"], done["reason"]) == ("completed", "tests_passed")
    rounds = [
        (e["round"], e["calls"], e["verdict"]) for e in viewer.events if e["type"] == "turn.round" and e["turn"] == fix
    ]
    assert rounds == [(2, 1, ""), (3, 0, "1 failed"), (4, 1, "")], rounds
    tests_runs = [e for e in viewer.events if e["type"] == "run.started" and e["turn"] == fix]
    assert [e["command"] for e in tests_runs] == ["pytest", "pytest"]
    asked = generated(upstream)[-2]  # round 3: the failure, as a user message on the chain
    message = asked.items[-1]
    assert message["role"] == "user" and "test_add" in json.dumps(message), message
    assert "return a + b" in (driver.text("app.py") or "")
    await driver.close()
    await viewer.close()
    record = await stack.manage("shell", "-c", (
        "import json; from spark_ide.pairing.models import Run;"
        "print(json.dumps([[r.command, r.by_model, r.turn, r.status] for r in Run.objects.order_by('created_at')]))"
    ))
    assert json.loads(record.splitlines()[-1]) == [
        ["python app.py", True, turn, "ok"], ["pytest", True, fix, "failed"], ["pytest", True, fix, "ok"],
    ]
