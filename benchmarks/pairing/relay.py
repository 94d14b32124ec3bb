"""The pairing benchmark's baseline: the thinnest relay a browser could be served by.

``python -m benchmarks.pairing.relay --port P --upstream ws://HOST:PORT/v1/responses``

Each client socket gets its own model socket, opened before the client may prompt (as warm
as the Pilot's). A ``{"type": "prompt", "text": ...}`` sends one ``response.create`` with the
same instructions the IDE sends; every ``response.output_text.delta`` goes back at once as a
``turn.delta`` JSON text frame, framed by ``turn.started`` and ``turn.finished`` like the
IDE's events, so one client measures both. No outbox, no edit engine, no persistence: what
the IDE does beyond this is what the benchmark's ratio prices.

Fan-out mode: the sockets that connect to ``/watch/<name>`` share one model socket, opened
by the first of them. Any of them may prompt; every event of the answer is encoded once and
written to every socket of ``<name>`` (``websockets``' ``broadcast``: no waiting on a slow
socket), as the IDE's room does for its participants.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed

from spark_ide import responses_protocol as protocol
from spark_ide.live.events import TurnStatus
from spark_ide.live.prompting import EDIT_FORMAT
from spark_ide.upstream.profiles import profile_for
from spark_ide.upstream.request import Message, TurnRequest, responses_create

MODEL = "smollm2"
TERMINAL = {*protocol.FINAL_STATUSES, protocol.ERROR}
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _create(text: str) -> str:
    request = TurnRequest(instructions=EDIT_FORMAT, input=(Message("user", text),))
    body = responses_create(request, model=MODEL, profile=profile_for("local", MODEL), store=False, chain=False)
    return json.dumps(body)


async def _relay_turn(upstream: ClientConnection, text: str, turn_id: str, send: Send) -> None:
    """Play one turn: ``turn.started``, the model's deltas straight through, ``turn.finished``."""
    await send({"type": "turn.started", "turn": turn_id, "steered_from": None})
    await upstream.send(_create(text))
    status = TurnStatus.FAILED
    async for frame in upstream:
        event: dict[str, Any] = json.loads(frame)
        kind = event.get("type")
        if kind == protocol.OUTPUT_TEXT_DELTA:
            await send({"type": "turn.delta", "turn": turn_id, "text": event["delta"]})
        elif kind in TERMINAL:
            status = TurnStatus.COMPLETED if kind == protocol.COMPLETED else TurnStatus.FAILED
            break
    await send({"type": "turn.finished", "turn": turn_id, "status": status})


async def _session(client: ServerConnection, upstream_url: str) -> None:
    async with connect(upstream_url, compression=None, max_size=None) as upstream:
        await client.send(json.dumps({"type": "hello", "role": "owner"}))
        turns = 0
        async for message in client:
            request = json.loads(message)
            if request.get("type") == "prompt":
                turns += 1

                async def send(event: dict[str, Any]) -> None:
                    await client.send(json.dumps(event))

                await _relay_turn(upstream, str(request["text"]), f"bare-{turns}", send)


class Watched:
    """A fan-out room: its sockets, and the one model socket they share."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.watchers: set[ServerConnection] = set()
        self.upstream: ClientConnection | None = None
        self.turns = 0
        self.lock = asyncio.Lock()  # one answer at a time, like the Pilot
        self._opening = asyncio.Lock()

    async def model(self, upstream_url: str) -> ClientConnection:
        async with self._opening:
            if self.upstream is None:
                self.upstream = await connect(upstream_url, compression=None, max_size=None)
            return self.upstream

    async def send_all(self, event: dict[str, Any]) -> None:
        broadcast(self.watchers, json.dumps(event))  # encoded once for every socket

    async def answer(self, upstream_url: str, text: str) -> None:
        async with self.lock:
            upstream = await self.model(upstream_url)
            self.turns += 1
            await _relay_turn(upstream, text, f"bare-{self.name}-{self.turns}", self.send_all)


async def _watch(client: ServerConnection, room: Watched, upstream_url: str) -> None:
    await room.model(upstream_url)  # warm before the first prompt, as the IDE's room is
    room.watchers.add(client)
    try:
        await client.send(json.dumps({"type": "hello", "role": "owner"}))
        async for message in client:
            request = json.loads(message)
            if request.get("type") == "prompt":
                await room.answer(upstream_url, str(request["text"]))
    finally:
        room.watchers.discard(client)


async def serve_relay(port: int, upstream_url: str) -> None:
    rooms: dict[str, Watched] = {}

    async def handler(client: ServerConnection) -> None:
        path = client.request.path if client.request is not None else "/"
        with contextlib.suppress(ConnectionClosed):
            if path.startswith("/watch/"):
                name = path.removeprefix("/watch/")
                room = rooms.get(name) or rooms.setdefault(name, Watched(name))
                await _watch(client, room, upstream_url)
            else:
                await _session(client, upstream_url)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with serve(handler, "127.0.0.1", port, compression=None, max_size=None):
        print(f"listening on {port}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.pairing.relay", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="ws://HOST:PORT/v1/responses")
    args = parser.parse_args(argv)
    asyncio.run(serve_relay(args.port, args.upstream))


if __name__ == "__main__":
    main()
