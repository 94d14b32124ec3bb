from __future__ import annotations

import asyncio

import pytest
from websockets.exceptions import ConnectionClosed

from spark_ide import responses_protocol as protocol

from .protocol_client import WAIT_S, client_for, running_server


async def test_it_closes_an_idle_connection_at_its_lifetime_limit() -> None:
    async with running_server(lifetime_s=0.3) as server, client_for(server) as ws:
        error = await ws.recv()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.socket.recv(), WAIT_S)
    assert error["type"] == protocol.ERROR
    assert error["error"]["code"] == protocol.CONNECTION_LIMIT_REACHED
    assert ws.socket.close_code == 1000


async def test_it_interrupts_a_running_response_at_the_limit() -> None:
    async with running_server(lifetime_s=1.0) as server, client_for(server) as ws:
        await ws.create("[rate:50][say]" + "slow " * 500 + "[/say]")
        events = await ws.until(protocol.ERROR)
    assert events[-1]["error"]["code"] == protocol.CONNECTION_LIMIT_REACHED
    assert events[0]["type"] == protocol.CREATED
    assert protocol.COMPLETED not in [e["type"] for e in events]


async def test_a_new_connection_gets_a_fresh_lifetime() -> None:
    async with running_server(lifetime_s=0.5) as server:
        async with client_for(server) as ws:
            await ws.until(protocol.ERROR)
        async with client_for(server) as ws:
            events = await ws.run("[rate:100000][say]again[/say]")
    assert events[-1]["type"] == protocol.COMPLETED
