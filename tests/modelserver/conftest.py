"""Fixtures: a scripted-engine server on an ephemeral port and a client connected to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from spark_ide.modelserver.server import ModelServer

from .protocol_client import Client, client_for, running_server


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with running_server() as started:
        yield started


@pytest.fixture
async def ws(server: ModelServer) -> AsyncIterator[Client]:
    async with client_for(server) as connected:
        yield connected
