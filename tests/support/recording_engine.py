"""A scripted model-server engine that keeps the server side's own record of its work.

Tests that must prove something happened *upstream* (a generation really stopped, a socket
was warmed) read it here, where the model runs, instead of from the client's own notes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from websockets.asyncio.server import ServerConnection

from spark_ide.modelserver.engine import CancelToken, Job, Output, Piece, Tally
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.request_log import RequestLog
from spark_ide.modelserver.script import ScriptSource
from spark_ide.modelserver.server import ModelServer, ServerConfig

# finished: every token of its text; stopped: ended early, by a cancel or steer that reached
# the running response or by its socket closing under it; failed: it raised.
End = Literal["finished", "stopped", "failed"]


@dataclass
class Generation:
    """One ``generate`` call: what it was asked, what it produced, how it ended."""

    prompt: str  # the job's last user message
    effort: str | None = None  # the job's reasoning effort, as the request carried it
    job: Job | None = None  # the whole job: its conversation holds the tool calls and outputs
    started_at: float = field(default_factory=time.monotonic)
    tokens: int = 0
    end: End | None = None  # None while it runs


@dataclass
class Socket:
    """One client socket as the server saw it (``RecordingServer``): when it opened and
    closed (``time.monotonic()``), and the generations that ran on it."""

    opened_at: float
    closed_at: float | None = None  # None while it is open
    generations: list[Generation] = field(default_factory=list)


# The socket whose frames the running code serves (set per connection by ``RecordingServer``;
# the connection's worker task, which runs the engine, inherits it).
_SOCKET: ContextVar[Socket | None] = ContextVar("recording_socket", default=None)


class RecordingEngine(ScriptedEngine):
    def __init__(self, scripts: Mapping[str, ScriptSource] | None = None, *, tokens_per_s: float = 1000.0,
                 ttft_s: float = 0.02) -> None:
        super().__init__(scripts, tokens_per_s=tokens_per_s, ttft_s=ttft_s)
        self.generations: list[Generation] = []
        self.warmups: list[Job] = []  # each ``generate: false`` request, in arrival order

    async def prepare(self, job: Job, tally: Tally) -> None:
        self.warmups.append(job)
        await super().prepare(job, tally)

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Output, None]:
        generation = Generation(job.last_user_text(), effort=job.effort, job=job)
        self.generations.append(generation)
        socket = _SOCKET.get()
        if socket is not None:
            socket.generations.append(generation)
        try:
            async for output in super().generate(job, tally, cancel):
                if isinstance(output, Piece):
                    generation.tokens += output.tokens
                yield output
        except Exception:
            generation.end = "failed"
            raise
        except BaseException:  # GeneratorExit, CancelledError: closed from outside
            generation.end = "stopped"
            raise
        generation.end = "stopped" if cancel.is_set() else "finished"

    def asked(self, prompt: str) -> list[Generation]:
        """The generations whose last user message was ``prompt``."""
        return [generation for generation in self.generations if generation.prompt == prompt]


class RecordingServer(ModelServer):
    """The model server, noting each client socket it served (``sockets``, in the order
    they opened) and when the server saw it close: where a test proves, on the model's side,
    that the IDE closed a socket and when. Every ``response.create`` it received is in
    ``request_log`` (the tool outputs a client sent, its ``previous_response_id``)."""

    request_log: RequestLog

    def __init__(self, engine: RecordingEngine, config: ServerConfig | None = None) -> None:
        super().__init__(engine, config, request_log=RequestLog())
        self.sockets: list[Socket] = []

    async def _handle(self, socket: ServerConnection) -> None:
        seen = Socket(opened_at=time.monotonic())
        self.sockets.append(seen)
        _SOCKET.set(seen)  # this handler runs in a task of its own: the value stays with it

        async def note_close() -> None:  # as the connection closes, before the server tidies up
            await socket.wait_closed()
            seen.closed_at = time.monotonic()

        watch = asyncio.create_task(note_close())
        try:
            await super()._handle(socket)
        finally:
            await watch

    def socket_of(self, generation: Generation) -> Socket:
        return next(socket for socket in self.sockets if any(g is generation for g in socket.generations))


def recording_engine(server: ModelServer) -> RecordingEngine:
    engine = server.engine
    assert isinstance(engine, RecordingEngine), "the server was not started with a RecordingEngine"
    return engine
