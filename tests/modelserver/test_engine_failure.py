from __future__ import annotations

import pytest

from spark_ide import responses_protocol as protocol

from .fake_engines import BrokenEngine
from .protocol_client import client_for, running_server


async def test_an_engine_bug_fails_the_response_and_keeps_the_socket(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_server(BrokenEngine()) as server, client_for(server) as ws:
        failed = await ws.run("anything")
        warm = await ws.run("still usable", generate=False)
    final = failed[-1]
    assert final["type"] == protocol.FAILED
    assert final["response"]["error"] == {
        "code": "server_error",
        "message": "The engine failed unexpectedly.",
    }
    assert final["response"]["output"][0]["content"][0]["text"] == "partial"
    assert warm[-1]["type"] == protocol.COMPLETED
    assert "engine failed on response" in caplog.text


async def test_a_failed_response_cannot_be_chained() -> None:
    async with running_server(BrokenEngine()) as server, client_for(server) as ws:
        failed = await ws.run("anything")
        events = await ws.run("next", previous_response_id=failed[-1]["response"]["id"])
    assert events[-1]["error"]["code"] == protocol.PREVIOUS_RESPONSE_NOT_FOUND
