"""Effort levels reach an OpenAI-style server as reasoning.effort and are accepted."""

from __future__ import annotations

import pytest

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, open_client
from tests.upstream.helpers import base_url_of, client_config, collect, say, turn


@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh"])
async def test_every_effort_level_is_accepted_upstream(
    openai_like_server: ModelServer, effort: str
) -> None:
    client = await open_client(client_config(base_url_of(openai_like_server), openai_like=True))
    try:
        stream = await client.start(turn(say("ok"), effort=effort))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.text == "ok"
    finally:
        await client.close()
