"""A small Responses-socket client and a running-server helper for the protocol tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import Engine
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer, ServerConfig

WAIT_S = 10.0
TERMINAL = (protocol.COMPLETED, protocol.INCOMPLETE, protocol.FAILED, protocol.ERROR)
MODEL = "smollm2"


class Client:
    """Sends client events and reads server events, every wait bounded by ``wait_s``."""

    def __init__(self, socket: ClientConnection, wait_s: float = WAIT_S) -> None:
        self.socket = socket
        self.wait_s = wait_s

    async def send(self, event: dict[str, Any]) -> None:
        await self.socket.send(json.dumps(event))

    async def create(self, text: str | list[dict[str, Any]], **fields: Any) -> None:
        await self.send({"type": protocol.CREATE, "model": MODEL, "input": text, **fields})

    async def recv(self) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.socket.recv(), self.wait_s)
        event = json.loads(frame)
        assert isinstance(event, dict)
        return event

    async def until(self, *types: str) -> list[dict[str, Any]]:
        """Events up to and including the first one whose type is in ``types``."""
        events = []
        while True:
            event = await self.recv()
            events.append(event)
            if event["type"] in types:
                return events

    async def response(self) -> list[dict[str, Any]]:
        return await self.until(*TERMINAL)

    async def run(self, text: str | list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
        await self.create(text, **fields)
        return await self.response()


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == protocol.OUTPUT_TEXT_DELTA)


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


@asynccontextmanager
async def running_server(engine: Engine | None = None, **config: Any) -> AsyncIterator[ModelServer]:
    server = ModelServer(engine or ScriptedEngine(), ServerConfig(port=0, **config))
    async with server:
        yield server


@asynccontextmanager
async def client_for(
    server: ModelServer, wait_s: float = WAIT_S, **options: Any
) -> AsyncIterator[Client]:
    async with connect(server.url, open_timeout=WAIT_S, **options) as socket:
        yield Client(socket, wait_s)
