"""Keys never appear in logs, reprs or errors, even with every logger at DEBUG."""

from __future__ import annotations

import logging

import pytest

from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import Completed, UpstreamError, open_client
from tests.upstream.helpers import API_KEY, base_url_of, client_config, collect, say, turn


async def test_the_key_stays_out_of_debug_logs_and_errors(
    openai_like_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = client_config(base_url_of(openai_like_server), openai_like=True)
    client = await open_client(config)
    try:
        stream = await client.start(turn(say("secret-free")))
        assert isinstance((await collect(stream))[-1], Completed)
    finally:
        await client.close()
    wrong = "sk-another-secret-key-42"
    with pytest.raises(UpstreamError) as caught:
        await open_client(client_config(base_url_of(openai_like_server), openai_like=True,
                                        api_key=wrong))
    # Both sides: the client's log and our model server's (standing in for the provider).
    client_log = "\n".join(r.getMessage() for r in caplog.records)
    assert "Bearer ***" in client_log  # the handshake was logged, redacted
    for key in (API_KEY, wrong):
        assert key not in client_log
        assert key not in str(caught.value)
        assert key not in repr(config)
