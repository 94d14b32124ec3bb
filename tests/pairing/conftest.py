"""A live session under test: the real ASGI app, the real Pilot, the scripted model server."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from pycrdt import Doc, Map, Text, YMessageType, create_update_message, handle_sync_message

from spark_ide.accounts.services import api_token_create
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.models import Participant, Role
from spark_ide.pairing.services import session_create
from spark_ide.workspaces.services import workspace_create
from tests.support.recording_engine import RecordingEngine

FILES = {
    "app.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "util.py": "X = 1\n",
}


@dataclass
class LiveClient:
    """One socket to a session, as a browser would hold it: events in order, a Yjs replica."""

    comm: WebsocketCommunicator
    events: list[dict[str, Any]] = field(default_factory=list)
    doc: Doc[Any] = field(default_factory=Doc)
    answers: bool = False  # answer the server's sync step 1 with a step 2, as a page does
    adopts: bool = True  # take a replaced document as it comes, as a page does
    _replies: list[bytes] = field(default_factory=list)

    async def send(self, message: dict[str, Any]) -> None:
        await self.comm.send_to(text_data=json.dumps(message))

    async def pump(self, timeout: float = 0.05) -> None:
        """Take in everything the server sent within ``timeout``."""
        # receive_output(timeout) would cancel the application on a timeout: ask first, then
        # take only what is there now, so a steady stream cannot keep us here.
        if await self.comm.receive_nothing(timeout, interval=0.002):
            return
        while not self.comm.output_queue.empty():
            frame = await self.comm.receive_output()
            if frame["type"] == "websocket.close":
                raise ConnectionError(f"closed by the server: {frame}")
            if frame.get("text") is not None:
                event = json.loads(frame["text"])
                self.events.append(event)
                if event["type"] == "document.replaced" and self.adopts:
                    await self.adopt(event)
            elif frame.get("bytes") is not None:
                self._apply_binary(frame["bytes"])
            for reply in self._replies:
                await self.comm.send_to(bytes_data=reply)
            self._replies.clear()

    def _apply_binary(self, data: bytes) -> None:
        if data[0] == YMessageType.SYNC:
            reply = handle_sync_message(data[1:], self.doc)
            if reply is not None and self.answers:
                self._replies.append(reply)

    async def adopt(self, event: dict[str, Any]) -> None:
        """The page's part of ``document.replaced``: the new document, then ``document.adopted``."""
        self.doc = Doc()
        self.doc.apply_update(base64.b64decode(event["state"]))
        await self.send({"type": "document.adopted", "generation": event["generation"]})

    async def until(self, predicate: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Wait for the first event (from now on or already seen) that satisfies ``predicate``."""
        deadline = asyncio.get_running_loop().time() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if predicate(event):
                    return event
            seen = len(self.events)
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no matching event within {timeout}s; got {[e['type'] for e in self.events]}")
            await self.pump(0.05)

    async def until_true(self, check: Any, timeout: float = 5.0) -> None:
        """Take in what the server sends until ``check()`` holds (about the replica, say)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not check():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not reached within {timeout}s; events: {[e['type'] for e in self.events]}")
            await self.pump(0.02)

    def of(self, kind: str, turn: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind and (turn is None or e.get("turn") == turn)]

    def text(self, path: str) -> str | None:
        files = self.doc.get("files", type=Map)
        return str(files[path]) if path in files else None

    async def type_text(self, path: str, index: int, text: str) -> None:
        """A human edit: change the replica and send the update, as y-codemirror would."""
        files = self.doc.get("files", type=Map)
        before = self.doc.get_state()
        with self.doc.transaction(origin="human"):
            target: Text = files[path]
            target.insert(index, text)
        await self.comm.send_to(bytes_data=create_update_message(self.doc.get_update(before)))

    async def close(self) -> None:
        await self.comm.disconnect()


@pytest.fixture
async def model_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ModelServer]:
    """Our model server with the scripted engine, which keeps its own record of each generation
    (``tests.support.recording_engine``); the IDE's upstream client points at it."""
    server = ModelServer(RecordingEngine(tokens_per_s=2000.0, ttft_s=0.005), ServerConfig(port=0))
    async with server:
        point_the_ide_at(server, monkeypatch)
        yield server


def point_the_ide_at(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    base = server.url.removesuffix("/responses").replace("ws://", "http://")
    monkeypatch.setenv("SPARK_PROVIDER", "local")
    monkeypatch.setenv("OPENAI_BASE_URL", base)
    monkeypatch.delenv("SPARK_MODEL", raising=False)


@dataclass
class Live:
    session_id: str
    workspace_id: str
    owner_token: str
    owner: Any


@pytest.fixture
def live(transactional_db: None, django_user_model: Any, settings: Any) -> Iterator[Live]:
    settings.SPARK_EDIT_STYLE = "edits"
    settings.SPARK_CONTEXT_TOKENS = 128_000
    settings.SPARK_MAX_OUTPUT_TOKENS = 100_000  # the scripted engine is not the small model
    owner = django_user_model.objects.create_user(username="ada", password="pw-ada-123")
    workspace = workspace_create(owner=owner, name="live", files=dict(FILES))
    session = session_create(workspace=workspace, by=owner)
    yield Live(str(session.id), str(workspace.id), api_token_create(user=owner), owner)


async def connect(
    live: Live, token: str | None = None, path: str | None = None, app: Any = None, *,
    doc: Doc[Any] | None = None, answers: bool = False, adopts: bool = True,
) -> LiveClient:
    """A socket to the session through ``app`` (the IDE's ASGI application by default);
    ``doc``: the document the page holds already (a reconnect)."""
    from spark_ide.asgi import application

    headers = [(b"authorization", f"Token {token or live.owner_token}".encode())]
    comm = WebsocketCommunicator(app or application, path or f"/ws/sessions/{live.session_id}/", headers=headers)
    connected, _ = await comm.connect(timeout=10)
    assert connected
    client = LiveClient(comm, answers=answers, adopts=adopts)
    if doc is not None:
        client.doc = doc
    await client.until(lambda e: e["type"] == "hello")
    return client


@pytest.fixture
async def rooms() -> AsyncIterator[None]:
    """Close every room a test opened, so its Pilot and tasks end with the test."""
    yield
    await ROOMS.close_all()
    # The rooms' database thread keeps its connection; close it so the test database can go.
    await database_sync_to_async(connections.close_all)()


async def token_for(user: Any) -> str:
    return str(await database_sync_to_async(api_token_create)(user=user))


async def connect_viewer(live: Live, django_user_model: Any, username: str = "vic") -> LiveClient:
    """Someone who joined the session as a viewer, on a socket of their own."""
    viewer = await database_sync_to_async(django_user_model.objects.create_user)(
        username=username, password=f"pw-{username}-123",
    )
    await database_sync_to_async(Participant.objects.create)(session_id=live.session_id, user=viewer, role=Role.VIEWER)
    return await connect(live, token=await token_for(viewer))


def say(text: str, rate: int = 2000) -> str:
    """A prompt that makes the scripted engine write exactly ``text``."""
    return f"[rate:{rate}][say]{text}[/say]"


async def refused(client: LiveClient, message: dict[str, Any]) -> dict[str, Any]:
    """Send ``message`` and wait for the ``error`` it is answered with."""
    before = len(client.of("error"))
    await client.send(message)
    await client.until(lambda e: e["type"] == "error" and len(client.of("error")) > before)
    error: dict[str, Any] = client.of("error")[-1]
    return error
