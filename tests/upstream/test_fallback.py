"""HTTP 426 on the WebSocket upgrade: the session falls back to HTTP/SSE, as Codex does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from http import HTTPStatus

import httpx
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from spark_ide.upstream import Completed, Transport, open_client
from tests.upstream.helpers import client_config, collect, turn
from tests.upstream.sse_fixtures import chat_server, chunk, sse_body


@pytest.fixture
async def refusing_port() -> AsyncIterator[int]:
    """A WebSocket endpoint that answers every upgrade with 426 Upgrade Required."""

    def refuse(connection: ServerConnection, request: Request) -> Response:
        return connection.respond(HTTPStatus.UPGRADE_REQUIRED, "use HTTP\n")

    async def never(connection: ServerConnection) -> None:
        raise AssertionError("no upgrade may succeed here")

    async with serve(never, "127.0.0.1", 0, process_request=refuse) as server:
        yield int(next(iter(server.sockets)).getsockname()[1])


async def test_it_falls_back_to_sse_when_the_upgrade_gets_426(refusing_port: int) -> None:
    seen: list[httpx.Request] = []
    body = sse_body([chunk("via "), chunk("http"), chunk(finish="stop")])
    config = client_config(f"http://127.0.0.1:{refusing_port}/v1", openai_like=True)
    client = await open_client(config, http_transport=chat_server(body, seen=seen))
    try:
        assert client.transport is Transport.CHAT_SSE
        stream = await client.start(turn("hello"))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.text == "via http"
        assert seen[-1].url.path == "/v1/chat/completions"
        assert seen[-1].url.host == "127.0.0.1"
    finally:
        await client.close()
