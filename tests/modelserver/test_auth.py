from __future__ import annotations

from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from spark_ide import responses_protocol as protocol

from .protocol_client import WAIT_S, client_for, running_server


async def refused_status(url: str, **options: Any) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, open_timeout=WAIT_S, **options):
            pass
    return refused.value.response.status_code


async def test_it_refuses_other_paths() -> None:
    async with running_server() as server:
        assert await refused_status(server.url.replace("/v1/responses", "/v1/chat")) == 404


async def test_it_refuses_a_missing_key() -> None:
    async with running_server(api_key="sekrit") as server:
        assert await refused_status(server.url) == 401


async def test_it_refuses_a_wrong_key() -> None:
    async with running_server(api_key="sekrit") as server:
        headers = {"Authorization": "Bearer wrong"}
        assert await refused_status(server.url, additional_headers=headers) == 401


async def test_it_serves_the_right_key() -> None:
    async with running_server(api_key="sekrit") as server:
        headers = {"Authorization": "Bearer sekrit"}
        async with client_for(server, additional_headers=headers) as ws:
            events = await ws.run("[say]welcome[/say]")
    assert events[-1]["type"] == protocol.COMPLETED


async def test_it_needs_no_key_when_none_is_configured() -> None:
    async with running_server() as server, client_for(server) as ws:
        events = await ws.run("[say]open[/say]")
    assert events[-1]["type"] == protocol.COMPLETED
