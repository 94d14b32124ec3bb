"""The real Codex CLI (npm ``@openai/codex``, its native binary; ``make codex-cli``) against
our model server: a scripted ``apply_patch`` custom tool call is applied by Codex to its
working directory, and Codex answers it with the matching ``custom_tool_call_output``.

What Codex 0.171 does, pinned here. With ``supports_websockets = true`` it opens one
WebSocket to ``{base_url}/responses`` (``OpenAI-Beta: responses_websockets=2026-02-06``),
warms it with ``generate: false``, chains the turn to the warm-up with
``previous_response_id`` and only the new items, and answers the call on the same socket
with ``previous_response_id`` and the output alone. With ``supports_websockets = false`` it
POSTs each request to ``{base_url}/responses`` (SSE) with the whole history, our call item
included. ``store: false`` throughout. It offers ``apply_patch`` as a custom tool with a
Lark grammar only to models it knows (``gpt-5.5`` here; an unknown name gets none).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.modelserver.request_log import RequestLog
from spark_ide.modelserver.server import ModelServer, ServerConfig
from tests.conftest import require

pytestmark = pytest.mark.external

CODEX = Path(__file__).parent / "codex" / "node_modules" / ".bin" / "codex"
MODEL = "gpt-5.5"  # a model Codex knows, so it offers its apply_patch tool
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: hello.py\n"
    "@@\n"
    " def greet():\n"
    "-    return 'hi'\n"
    "+    return 'hello from the scripted model'\n"
    "*** Add File: notes.txt\n"
    "+written by Codex\n"
    "*** End Patch\n"
)
SCRIPTS = {
    "patch": [
        ["Editing hello.py.",
         {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "call_id": "call_codex_1"}],
        "Done: hello.py patched.",
    ]
}
RUN_TIMEOUT_S = 90.0


class HeaderRecordingServer(ModelServer):
    """Keeps the headers of every WebSocket upgrade it accepted."""

    def __init__(self, engine: ScriptedEngine, config: ServerConfig) -> None:
        super().__init__(engine, config, request_log=RequestLog())
        self.upgrades: list[dict[str, str]] = []

    def _check_upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        self.upgrades.append({name.lower(): value for name, value in request.headers.raw_items()})
        return super()._check_upgrade(connection, request)


def codex_home(tmp_path: Path, port: int, websockets: bool) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "spark"\n'
        "[model_providers.spark]\n"
        'name = "Spark IDE model server"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\n'
        f"supports_websockets = {str(websockets).lower()}\n"
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        # Nothing leaves the machine: no usage analytics sent to OpenAI.
        "[analytics]\n"
        "enabled = false\n"
    )
    return home


async def run_codex(home: Path, workdir: Path, prompt: str) -> tuple[int, list[dict[str, Any]], str]:
    process = await asyncio.create_subprocess_exec(
        str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "--json",
        # The working directory is the test's own temporary directory: Codex's sandbox
        # (bubblewrap inside this container) is not what is under test.
        "--dangerously-bypass-approvals-and-sandbox", "--strict-config", "-C", str(workdir), prompt,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        # Nothing of the machine's own Codex set-up or keys: only PATH (node) is inherited.
        env={"CODEX_HOME": str(home), "HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    events = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    return process.returncode or 0, events, err.decode()


def prepared(tmp_path: Path) -> Path:
    require(CODEX.exists(), f"the Codex CLI is not installed ({CODEX}); run `make codex-cli`")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "hello.py").write_text("def greet():\n    return 'hi'\n")
    return workdir


def assert_patched_and_answered(workdir: Path, events: list[dict[str, Any]], log: RequestLog | None) -> None:
    """Codex applied the patch to its directory and answered the call with its output."""
    assert (workdir / "hello.py").read_text() == "def greet():\n    return 'hello from the scripted model'\n"
    assert (workdir / "notes.txt").read_text() == "written by Codex\n"
    changes = [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == "file_change"]
    assert [c["status"] for c in changes] == ["completed"]
    assert events[-1]["type"] == "turn.completed"
    assert log is not None and all(entry.error is None for entry in log.entries)
    [answer] = log.entries[-1].tool_outputs()
    assert answer["type"] == "custom_tool_call_output" and answer["call_id"] == "call_codex_1"
    assert "Success. Updated the following files" in answer["output"]
    # The tool Codex offers is the freeform apply_patch with its Lark grammar.
    [tool] = [t for t in log.entries[-1].body["tools"] if t.get("name") == "apply_patch"]
    assert tool["type"] == "custom"
    assert (tool["format"]["type"], tool["format"]["syntax"]) == ("grammar", "lark")
    assert "*** Begin Patch" in tool["format"]["definition"]


def engine() -> ScriptedEngine:
    return ScriptedEngine(SCRIPTS, tokens_per_s=5000, ttft_s=0.0)


async def test_codex_over_the_socket_applies_the_patch_and_answers_on_the_same_socket(tmp_path: Path) -> None:
    workdir = prepared(tmp_path)
    async with HeaderRecordingServer(engine(), ServerConfig(port=0, model=MODEL)) as server:
        home = codex_home(tmp_path, server.port, websockets=True)
        status, events, stderr = await run_codex(home, workdir, "[script:patch]")
    assert status == 0, stderr
    assert_patched_and_answered(workdir, events, server.request_log)
    assert len(server.upgrades) == 1
    assert server.upgrades[0]["openai-beta"] == "responses_websockets=2026-02-06"
    assert json.loads(server.upgrades[0]["x-codex-turn-metadata"])["analytics_enabled"] is False
    assert server.request_log is not None
    warmup, turn, follow_up = server.request_log.entries
    assert warmup.body["generate"] is False and warmup.response_id is not None
    assert turn.body["previous_response_id"] == warmup.response_id
    assert follow_up.body["previous_response_id"] == turn.response_id
    assert [item["type"] for item in follow_up.items] == ["custom_tool_call_output"]


async def test_codex_over_http_replays_the_history_with_our_call(tmp_path: Path) -> None:
    workdir = prepared(tmp_path)
    async with SseModelServer(engine(), model=MODEL, request_log=RequestLog()) as server:
        home = codex_home(tmp_path, server.port, websockets=False)
        status, events, stderr = await run_codex(home, workdir, "[script:patch]")
    assert status == 0, stderr
    assert_patched_and_answered(workdir, events, server.request_log)
    assert server.request_log is not None
    turn, follow_up = server.request_log.entries
    assert [entry.transport for entry in (turn, follow_up)] == ["http", "http"]
    assert "previous_response_id" not in follow_up.body and follow_up.body["stream"] is True
    replayed = [item for item in follow_up.items if item.get("type") == "custom_tool_call"]
    assert [(item["call_id"], item["input"]) for item in replayed] == [("call_codex_1", PATCH)]
