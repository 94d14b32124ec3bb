"""The tool loop through the whole stack, for each tool dialect: pages on a real Daphne
process, our model server in its OpenAI mode playing ``apply_patch`` calls in this process,
its request log holding every request exactly as it arrived.

For each of ``apply-patch`` (a custom tool with the V4A grammar), ``apply-patch-builtin``
(``apply_patch_call`` items, one file operation each, no envelope) and ``function`` (a
function tool whose JSON ``input`` is the patch), on the Responses socket, and ``function``
over Chat Completions (``chat``: an OpenAI-compatible host): the file changes while the call streams;
a hunk that finds nothing is reported to the model, which fixes it in round 2; the follow-ups
carry the outputs with the right call ids on ``previous_response_id``; and a steer in the
middle of a hunk rolls that hunk back, keeps the finished ones and leaves no call unanswered.

Marked ``processes``: it starts the IDE as a process of its own (once per dialect).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from benchmarks.pairing.stack import Stack
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.modelserver.request_log import RequestLog
from tests.support.peer import Peer
from tests.support.recording_engine import RecordingEngine, RecordingServer

pytestmark = pytest.mark.processes

KEY = "sk-test-openai-like"
MODEL = "gpt-5.3-codex"
APP = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + a\n"
# Round 1: the first hunk applies; the second names lines the file does not have (and is
# long, so that the first hunk is in the file while the call still streams).
GOOD = "@@ def add(a, b):\n-    return a + b\n+    return a + b  # adds\n"
WRONG = "@@\n-    return a * a\n" + "".join(f"+    # line {i} of a long wrong hunk\n" for i in range(40))
FIX = "@@ def sub(a, b):\n-    return a + a\n+    return a - b\n"
FIXED = "def add(a, b):\n    return a + b  # adds\n\n\ndef sub(a, b):\n    return a - b\n"
# The steer: a first call that applies, then a call cut in the middle of its hunk.
UTIL = "X = 1\nY = 2\n"
FIRST = "@@\n-X = 1\n+X = 10\n"
SLOW = "@@\n-Y = 2\n" + "".join(f"+Y{i} = {i}\n" for i in range(200))

OUTPUT_TYPES = {
    "apply-patch": "custom_tool_call_output",
    "apply-patch-builtin": "apply_patch_call_output",
    "function": "function_call_output",
    "chat": None,  # Chat Completions: role "tool" messages
}


def envelope(path: str, hunks: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n{hunks}*** End Patch\n"


def call(style: str, call_id: str, path: str, hunks: str) -> dict[str, Any]:
    """A scripted ``apply_patch`` call of ``hunks`` in ``path``, as ``style`` makes it."""
    if style == "chat":
        style = "function"
    if style == "apply-patch":
        return {"type": "custom_tool_call", "name": "apply_patch", "input": envelope(path, hunks), "call_id": call_id}
    if style == "function":
        return {"type": "function_call", "name": "apply_patch", "arguments": {"input": envelope(path, hunks)},
                "call_id": call_id}
    return {"type": "apply_patch_call", "operation": {"type": "update_file", "path": path, "diff": hunks},
            "call_id": call_id}


def scripts(style: str) -> dict[str, Any]:
    return {
        "fix": [
            ["Fixing both.", call(style, "call_1", "app.py", GOOD + WRONG)],
            ["Hunk 2 missed; again.", call(style, "call_2", "app.py", FIX)],
            "Done.",
        ],
        "slow": [["Changing util.", call(style, "call_a", "util.py", FIRST), call(style, "call_b", "util.py", SLOW)]],
    }


@pytest.fixture(params=list(OUTPUT_TYPES))
def style(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def upstream(style: str) -> AsyncIterator[RecordingServer | SseModelServer]:
    engine = RecordingEngine(scripts(style), tokens_per_s=400.0, ttft_s=0.005)
    if style == "chat":  # an OpenAI-compatible host: function tool calls over Chat Completions
        async with SseModelServer(engine, model=MODEL, api_key=KEY, request_log=RequestLog()) as sse:
            yield sse
        return
    config = ServerConfig(port=0, api_key=KEY, cancel_extension=False, model=MODEL)
    async with RecordingServer(engine, config) as server:
        yield server


@pytest.fixture
async def stack(upstream: RecordingServer | SseModelServer, style: str) -> AsyncIterator[Stack]:
    chat = style == "chat"
    model = {
        "SPARK_PROVIDER": "openai-compatible" if chat else "openai", "OPENAI_API_KEY": KEY, "SPARK_MODEL": MODEL,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream.port}/v1", "SPARK_EDIT_STYLE": "function" if chat else style,
    }
    async with Stack({}, relay=False, upstream=model) as running:
        yield running


def generated(upstream: RecordingServer | SseModelServer) -> list[Any]:
    """The requests a response answered, warm-ups (``generate: false``) left out."""
    assert upstream.request_log is not None
    return [entry for entry in upstream.request_log.answered() if entry.body.get("generate", True)]


def outputs(entry: Any) -> list[dict[str, Any]]:
    return list(entry.tool_outputs())


def tools_offered(body: dict[str, Any]) -> list[str]:
    return [tool.get("name") or tool.get("function", {}).get("name") or tool["type"] for tool in body.get("tools", [])]


async def test_each_dialect_streams_in_place_fixes_a_failed_hunk_in_round_two_and_steers_cleanly(
    stack: Stack, upstream: RecordingServer | SseModelServer, style: str,
) -> None:
    workspace, ws_url = await stack.session({"app.py": APP, "util.py": UTIL})
    peer = Peer("driver", stack.token)
    await peer.open(ws_url)
    engine = upstream.engine
    assert isinstance(engine, RecordingEngine)

    await peer.send({"type": "prompt", "text": "[script:fix]", "path": "app.py"})
    turn = (await peer.until(lambda e: e["type"] == "turn.started"))["turn"]
    # The first hunk is in the file while the model still writes the call (its long second hunk).
    await peer.until_true(lambda: "# adds" in (peer.text("app.py") or ""))
    assert engine.generations[0].end is None, "the file changed only once the call had ended"
    assert not any(e["type"] == "turn.round" for e in peer.events)

    done = await peer.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert (done["status"], done["reason"]) == ("completed", "answered"), done
    assert [e["round"] for e in peer.events if e["type"] == "turn.round"] == [2, 3]
    assert peer.text("app.py") == FIXED
    assert await stack.file_text(workspace, "app.py", FIXED) == FIXED

    first, second, third = generated(upstream)[:3]
    assert "apply_patch" in tools_offered(first.body), first.body.get("tools")
    # What each follow-up answers: its outputs (Chat Completions resends the earlier ones too).
    failed, fixed = outputs(second)[-1], outputs(third)[-1]
    assert len(outputs(second)) == 1 and len(outputs(third)) == (2 if style == "chat" else 1)
    if style == "chat":  # no chain: the whole conversation, the calls in the assistant's message
        assert [failed["role"], failed["tool_call_id"], fixed["tool_call_id"]] == ["tool", "call_1", "call_2"]
        calls = [m["tool_calls"][0]["id"] for m in third.items if m.get("role") == "assistant" and m.get("tool_calls")]
        assert calls == ["call_1", "call_2"]
        failed["output"], fixed["output"] = failed["content"], fixed["content"]
    else:
        assert second.body["previous_response_id"] == first.response_id
        assert third.body["previous_response_id"] == second.response_id
        assert (failed["type"], failed["call_id"]) == (OUTPUT_TYPES[style], "call_1")
        assert fixed["call_id"] == "call_2"
    assert "hunk 2 failed" in failed["output"] and "return a * a" in failed["output"], failed["output"]
    assert "hunk 1 applied" in failed["output"]
    if style == "apply-patch-builtin":
        assert failed["status"] == "failed"
    assert "app.py" in fixed["output"] and "failed" not in fixed["output"].lower()
    statuses = [(e["block"], e["state"]) for e in peer.events if e["type"] == "edit.status" and e["turn"] == turn]
    assert (1, "failed") in statuses and statuses[-1] == (2, "applied"), statuses

    # A steer in the middle of the second call's hunk.
    await peer.send({"type": "prompt", "text": "[script:slow][rate:200]", "path": "util.py"})
    slow = (await peer.until(lambda e: e["type"] == "turn.started" and e["turn"] != turn))["turn"]
    await peer.until_true(lambda: "Y0 = 0" in (peer.text("util.py") or ""))
    await peer.send({"type": "steer", "text": "[say]Stopped there.[/say]"})
    ended = await peer.until(lambda e: e["type"] == "turn.finished" and e["turn"] == slow)
    assert ended["status"] == "steered"
    new = (await peer.until(lambda e: e["type"] == "turn.started" and e.get("steered_from") == slow))["turn"]
    await peer.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new)
    assert peer.text("util.py") == "X = 10\nY = 2\n"  # the first call stays, the cut hunk is gone
    assert upstream.request_log is not None
    refused = [entry.error for entry in upstream.request_log.entries if entry.error is not None]
    assert refused == [], f"the model server refused a request (an unanswered call?): {refused}"
    steer_request = generated(upstream)[-1]
    assert "previous_response_id" not in steer_request.body or not outputs(steer_request)
    assert "Stopped there." in json.dumps(steer_request.items)
    await peer.close()
