from __future__ import annotations

import asyncio

import pytest
from websockets.exceptions import ConnectionClosed

from .protocol_client import WAIT_S, client_for, running_server


async def test_it_closes_an_idle_connection_at_its_lifetime_limit() -> None:
    async with running_server(lifetime_s=0.3) as server, client_for(server) as ws:
        error = await ws.recv()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.socket.recv(), WAIT_S)
    assert error["type"] == "error"
    assert error["error"]["code"] == "websocket_connection_limit_reached"
    assert ws.socket.close_code == 1000


async def test_it_interrupts_a_running_response_at_the_limit() -> None:
    async with running_server(lifetime_s=1.0) as server, client_for(server) as ws:
        await ws.create("[rate:50][say]" + "slow " * 500 + "[/say]")
        events = await ws.until("error")
    assert events[-1]["error"]["code"] == "websocket_connection_limit_reached"
    assert events[0]["type"] == "response.created"
    assert "response.completed" not in [e["type"] for e in events]


async def test_a_new_connection_gets_a_fresh_lifetime() -> None:
    async with running_server(lifetime_s=0.5) as server:
        async with client_for(server) as ws:
            await ws.until("error")
        async with client_for(server) as ws:
            events = await ws.run("[rate:100000][say]again[/say]")
    assert events[-1]["type"] == "response.completed"
