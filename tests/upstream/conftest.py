"""Fixtures: our model server (a recording scripted engine) in its local and OpenAI-like
modes, and the loopback proxy in front of it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from benchmarks.loopproxy import LoopProxy
from spark_ide.modelserver.server import ModelServer
from tests.upstream.helpers import ProxyFactory, model_server


@pytest.fixture
async def local_server() -> AsyncIterator[ModelServer]:
    async with model_server(openai_like=False) as server:
        yield server


@pytest.fixture
async def openai_like_server() -> AsyncIterator[ModelServer]:
    """Behaves like OpenAI's socket: bearer auth, no cancel, FIFO, 60-minute limit."""
    async with model_server(openai_like=True) as server:
        yield server


@pytest.fixture
async def proxy_factory() -> AsyncIterator[ProxyFactory]:
    proxies: list[LoopProxy] = []

    async def make(server: ModelServer) -> LoopProxy:
        proxy = await LoopProxy("127.0.0.1", server.port).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        await proxy.stop()


