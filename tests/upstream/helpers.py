"""Shared helpers: our model server (a recording scripted engine: see
``tests.support.recording_engine``) in its local and OpenAI-like modes,
configs pointing the client at it, and bounded ways to read streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.server import ModelServer, ServerConfig
from spark_ide.upstream import (
    CancelStrategy,
    Message,
    ProviderConfig,
    RetryPolicy,
    TurnRequest,
    TurnStream,
    UpstreamEvent,
)
from spark_ide.upstream.ws_client import ResponsesClient
from tests.support.recording_engine import RecordingEngine

API_KEY = "sk-test-0123456789abcdef"
MODEL = "smollm2"
FAST_RETRY = RetryPolicy(initial_s=0.01, max_s=0.05, max_tries=5)
LONG_TEXT = " ".join(f"w{i:03d}" for i in range(400))  # 800 tokens of at most 4 chars
SCRIPTS = {"long": LONG_TEXT, "short": "alpha beta gamma"}
# Puts a loopback proxy in front of a server (the ``proxy_factory`` fixture): it counts sockets.
ProxyFactory = Callable[[ModelServer], Awaitable[LoopProxy]]


class _Gate:
    """A stream reader that stops handing on bytes while its gate is closed."""

    def __init__(self, reader: asyncio.StreamReader, gate: asyncio.Event) -> None:
        self._reader, self._gate = reader, gate

    async def read(self, n: int) -> bytes:
        data = await self._reader.read(n)
        await self._gate.wait()  # after the read: a read already waiting when the gate closes is held too
        return data


class StallingProxy(LoopProxy):
    """The loopback proxy, able to stall: ``stall()`` stops the server's bytes to the client
    on the sockets open now, as a provider that hangs would (the connection stays up, nothing
    more arrives). Sockets opened later flow normally, so a client that gives up and opens
    a new one finds a working server. ``refuse()`` stops listening (connections are refused,
    open ones cut) until ``listen_again()``, on the same port."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gates: list[asyncio.Event] = []
        self._port = 0

    @property
    def port(self) -> int:
        return self._port or super().port

    def stall(self) -> None:
        for gate in self._gates:
            gate.clear()

    async def refuse(self) -> None:
        assert self._server is not None
        self._port = super().port
        self._server.close()
        self.cut_all()
        await self._server.wait_closed()

    async def listen_again(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self._port)

    async def _pump_down(self, reader: asyncio.StreamReader, link: Any) -> None:
        gate = asyncio.Event()
        gate.set()
        self._gates.append(gate)
        await super()._pump_down(_Gate(reader, gate), link)  # type: ignore[arg-type]


@dataclass
class Session:
    """A client, and what the other side saw of it."""

    client: ResponsesClient
    engine: RecordingEngine  # the model server's record of each generation and warm-up
    proxy: LoopProxy  # between the two: counts the sockets the client opens


def server_config(*, openai_like: bool, steer: bool = False, lifetime_s: float = 3600.0
                  ) -> ServerConfig:
    return ServerConfig(
        host="127.0.0.1", port=0, api_key=API_KEY if openai_like else None,
        lifetime_s=lifetime_s, max_frame_bytes=4 * 1024 * 1024,
        cancel_extension=not openai_like, steer_extension=steer, model=MODEL,
    )


@asynccontextmanager
async def model_server(**kwargs: Any) -> AsyncIterator[ModelServer]:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=1000.0, ttft_s=0.02)
    async with ModelServer(engine, server_config(**kwargs)) as server:
        yield server


def base_url_of(server: ModelServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def client_config(base_url: str, *, openai_like: bool, **overrides: Any) -> ProviderConfig:
    config = ProviderConfig(
        provider="openai" if openai_like else "local",
        base_url=base_url,
        model=MODEL,
        api_key=API_KEY if openai_like else None,
        retry=FAST_RETRY,
        first_byte_timeout_s=10.0,
        idle_timeout_s=10.0,
    )
    return replace(config, **overrides)


def say(text: str, *, rate: float | None = None, ttft_ms: float | None = None) -> str:
    extra = "" if rate is None else f"[rate:{rate:g}]"
    extra += "" if ttft_ms is None else f"[ttft:{ttft_ms:g}]"
    return f"[say]{text}[/say]{extra}"


def turn(text: str, **kwargs: Any) -> TurnRequest:
    return TurnRequest(instructions="You are a test.", input=(Message("user", text),), **kwargs)


async def collect(stream: TurnStream, *, limit: int | None = None) -> list[UpstreamEvent]:
    """Every event of a stream (or the first ``limit``), bounded in time."""
    events: list[UpstreamEvent] = []

    async def run() -> None:
        async for event in stream:
            events.append(event)
            if limit is not None and len(events) >= limit:
                return

    await asyncio.wait_for(run(), 20)
    return events


ALL_SOCKET_STRATEGIES = (
    CancelStrategy.NATIVE_CANCEL,
    CancelStrategy.NATIVE_STEER,
    CancelStrategy.HOT_SPARE,
    CancelStrategy.RECONNECT,
)
