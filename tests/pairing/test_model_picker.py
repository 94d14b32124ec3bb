"""The model picker through the whole room (issue 34): two catalogue entries, each served by a
scripted model server of its own that notes every socket and generation. Switching the picker
mid-session opens the new model's socket at the switch (before any prompt), every page is told,
the next turn runs there (the server that got it says so), the stored turn names its model, and
the old model's socket closes once no turn runs on it. A turn running at the switch keeps its
model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.modelserver.config import ServerConfig
from spark_ide.pairing.models import Session, Turn
from spark_ide.pairing.services import turns_for
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import model_set
from tests.pairing.conftest import Live, connect, say
from tests.support.recording_engine import RecordingEngine, RecordingServer, recording_engine
from tests.support.waits import eventually

pytestmark = pytest.mark.django_db(transaction=True)


def catalogue_for(fast: RecordingServer, strong: RecordingServer) -> str:
    return f"""
default = "fast"

[[models]]
name = "fast"
provider = "local"
base_url = "http://127.0.0.1:{fast.port}/v1"
model = "fast-model"
edit_style = "edits"

[[models]]
name = "strong"
provider = "local"
base_url = "http://127.0.0.1:{strong.port}/v1"
model = "strong-model"
edit_style = "edits"
context_tokens = 64000
"""


@pytest.fixture
async def servers() -> AsyncIterator[tuple[RecordingServer, RecordingServer]]:
    async with (
        RecordingServer(RecordingEngine(tokens_per_s=2000.0, ttft_s=0.005), ServerConfig(port=0, model="fast-model"))
        as fast,
        RecordingServer(RecordingEngine(tokens_per_s=2000.0, ttft_s=0.005), ServerConfig(port=0, model="strong-model"))
        as strong,
    ):
        yield fast, strong


@pytest.fixture
def two_models(servers: tuple[RecordingServer, RecordingServer], settings: Any, tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(catalogue_for(*servers))
    settings.SPARK_MODELS_FILE = str(path)


async def pick(live: Live, name: str) -> None:
    """The owner picks ``name`` (as the API's PATCH does, and the page through it)."""
    def write() -> None:
        model_set(workspace=Workspace.objects.get(pk=live.workspace_id), value=name)
    await database_sync_to_async(write)()


def asked(prompt: str) -> str:
    """The person's request, from the model's request (after the workspace's files)."""
    return prompt.rpartition("Request: ")[2]


async def stored_models(live: Live) -> dict[str, str]:
    """Each turn's model, as the stored rows and the turns API have it."""
    def read() -> dict[str, str]:
        rows = dict(Turn.objects.filter(session_id=live.session_id).values_list("id", "model"))
        listed = {turn["id"]: turn["model"] for turn in turns_for(Session.objects.get(pk=live.session_id))}
        assert listed == rows
        return rows
    found: dict[str, str] = await database_sync_to_async(read)()
    return found


async def test_switching_warms_the_new_models_socket_at_once_and_the_next_turn_runs_there(
    live: Live, rooms: None, servers: tuple[RecordingServer, RecordingServer], two_models: None,
) -> None:
    fast, strong = servers
    owner = await connect(live)
    assert (await owner.until(lambda e: e["type"] == "model"))["name"] == "fast"  # joining: the room's model
    await eventually(lambda: len(fast.sockets) == 1)  # the default's socket warmed before any prompt
    await owner.send({"type": "prompt", "text": say("First answer.\n")})
    first = (await owner.until(lambda e: e["type"] == "turn.finished"))["turn"]
    assert [asked(g.prompt) for g in recording_engine(fast).generations] == [say("First answer.\n")]

    await pick(live, "strong")
    switched = await owner.until(lambda e: e["type"] == "model" and e["name"] == "strong")
    assert switched == {**switched, "provider": "local", "model": "strong-model"}
    # The strong model's socket opened at the switch, with no prompt yet; the fast one's closed.
    await eventually(lambda: len(strong.sockets) == 1)
    assert not recording_engine(strong).generations
    await eventually(lambda: fast.sockets[0].closed_at is not None)

    await owner.send({"type": "prompt", "text": say("Second answer.\n")})
    second = (await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] != first))["turn"]
    assert [asked(g.prompt) for g in recording_engine(strong).generations] == [say("Second answer.\n")]
    assert len(recording_engine(fast).generations) == 1  # nothing more went to the fast model
    assert len(strong.sockets) == 1  # the turn ran on the socket the switch warmed
    async with asyncio.timeout(10):  # the turn's record is written beside its events, not before them
        while len(models := await stored_models(live)) < 2:
            await asyncio.sleep(0.05)
    assert models == {first: "fast", second: "strong"}


async def test_a_turn_running_at_the_switch_keeps_its_model(
    live: Live, rooms: None, servers: tuple[RecordingServer, RecordingServer], two_models: None,
) -> None:
    fast, strong = servers
    owner = await connect(live)
    await owner.until(lambda e: e["type"] == "model")
    long = " ".join(f"w{i}" for i in range(300))
    await owner.send({"type": "prompt", "text": say(long, rate=300)})
    turn = (await owner.until(lambda e: e["type"] == "turn.delta"))["turn"]
    await pick(live, "strong")
    await owner.until(lambda e: e["type"] == "model" and e["name"] == "strong")
    await eventually(lambda: len(strong.sockets) == 1)
    assert fast.sockets[0].closed_at is None  # the running turn's model stays open under it
    finished = await owner.until(lambda e: e["type"] == "turn.finished", timeout=20)
    assert finished["turn"] == turn and finished["status"] == "completed"
    assert not recording_engine(strong).generations
    await eventually(lambda: fast.sockets[0].closed_at is not None)  # closed once its turn ended
    assert await stored_models(live) == {turn: "fast"}
