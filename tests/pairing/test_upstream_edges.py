"""The Pilot against an OpenAI-like socket (hot spare) and against a dropped connection."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer
from tests.pairing.conftest import FILES, Live, connect, say
from tests.pairing.test_steer_stop import FIRST_BLOCK, SECOND_BLOCK, STEERED, assert_nothing_after_finish
from tests.support.recording_engine import RecordingEngine, RecordingServer, recording_engine

pytestmark = [pytest.mark.django_db(transaction=True)]

KEY = "sk-test-openai-like"


@pytest.fixture
async def openai_like(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RecordingServer]:
    """Our server in its OpenAI mode: bearer auth, no cancel message, FIFO responses."""
    config = ServerConfig(port=0, api_key=KEY, cancel_extension=False)
    async with RecordingServer(RecordingEngine(tokens_per_s=2000.0, ttft_s=0.005), config) as server:
        monkeypatch.setenv("SPARK_PROVIDER", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.port}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("SPARK_MODEL", "smollm2")
        yield server


@pytest.fixture
async def proxied(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LoopProxy]:
    """The local model server behind a loopback proxy that can cut the connection."""
    async with ModelServer(ScriptedEngine(tokens_per_s=2000.0, ttft_s=0.005), ServerConfig(port=0)) as server:
        proxy = await LoopProxy("127.0.0.1", server.port).start()
        monkeypatch.setenv("SPARK_PROVIDER", "local")
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url())
        monkeypatch.delenv("SPARK_MODEL", raising=False)
        yield proxy
        await proxy.stop()


async def test_steer_works_through_the_hot_spare(live: Live, openai_like: RecordingServer, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    old = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "edit.status" and e["block"] == 1 and e["state"] == "streaming")
    await client.send({"type": "steer", "text": say(STEERED)})
    new = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != old)
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new["turn"])
    assert done["status"] == "completed", done
    await client.pump(0.5)
    assert {e["block"]: e["state"] for e in client.of("edit.status", old)} == {0: "applied", 1: "rolled_back"}
    assert client.text("app.py") == FILES["app.py"]
    assert client.text("steered.py") == "steered = True\n"
    assert "".join(e["text"] for e in client.of("turn.delta", new["turn"])) == STEERED
    assert_nothing_after_finish(client, old)
    # No cancel message here: the old answer was stopped by closing its socket, and the
    # re-prompt went on another one (the spare).
    first, second = recording_engine(openai_like).generations
    assert first.end == "stopped" and openai_like.socket_of(first).closed_at is not None
    assert openai_like.socket_of(second) is not openai_like.socket_of(first)
    await client.close()


async def test_a_dropped_upstream_fails_the_turn_cleanly_and_the_next_prompt_works(
    live: Live, proxied: LoopProxy, rooms: None
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "edit.status" and e["block"] == 1 and e["state"] == "streaming")
    proxied.cut_all()
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=30)
    assert (finished["status"], finished["reason"]) == ("failed", "connection_lost")
    assert "dropped mid-answer" in finished["error"]
    await client.pump(0.5)
    assert client.text("util.py") == "X = 2\n"  # the completed block stays
    assert client.text("app.py") == FILES["app.py"]  # the block in flight was rolled back
    assert_nothing_after_finish(client, turn)
    await client.send({"type": "prompt", "text": say(STEERED)})
    again = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != turn, timeout=30)
    assert again["status"] == "completed", again
    await client.pump(0.3)
    assert client.text("steered.py") == "steered = True\n"
    await client.close()
