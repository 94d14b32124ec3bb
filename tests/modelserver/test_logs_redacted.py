from __future__ import annotations

import logging

import pytest
import websockets

from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer, ServerConfig

KEY = "sk-never-log-me-0123"


async def test_the_handshake_log_never_carries_the_key(caplog: pytest.LogCaptureFixture) -> None:
    quiet = logging.getLogger("tests.quiet-client")
    quiet.setLevel(logging.WARNING)  # only the server's own logging is under test
    caplog.set_level(logging.DEBUG)
    async with ModelServer(ScriptedEngine(), ServerConfig(port=0, api_key=KEY)) as server:
        headers = {"Authorization": f"Bearer {KEY}"}
        async with websockets.connect(server.url, additional_headers=headers, logger=quiet):
            pass
    handshake = [r.getMessage() for r in caplog.records if "authorization" in r.getMessage().lower()]
    assert handshake, "the server logged no handshake header at DEBUG: nothing was checked"
    assert all(KEY not in message for message in handshake)
    assert all(KEY not in r.getMessage() for r in caplog.records)
