"""Effort levels reach an OpenAI-style server as reasoning.effort: the generation the
server ran was asked for that effort."""

from __future__ import annotations

import pytest

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, open_client
from tests.support.recording_engine import recording_engine
from tests.upstream.helpers import base_url_of, client_config, collect, say, turn


@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh"])
async def test_every_effort_level_reaches_the_model_upstream(
    openai_like_server: ModelServer, effort: str
) -> None:
    client = await open_client(client_config(base_url_of(openai_like_server), openai_like=True))
    try:
        stream = await client.start(turn(say(f"ok {effort}"), effort=effort))
        events = await collect(stream)
        assert isinstance(events[-1], Completed)
        assert stream.text == f"ok {effort}"
    finally:
        await client.close()
    (generation,) = recording_engine(openai_like_server).asked(say(f"ok {effort}"))
    assert generation.effort == effort
