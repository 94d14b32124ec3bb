"""A key the provider refuses (401/403), connecting or answering: the error is
``authentication_failed``, names the key by its label (never the key), and the live core ends
the turn ``provider_key_rejected`` (issue 34, bring your own key)."""

from __future__ import annotations

import json

import pytest

from spark_ide.live.events import FinishReason
from spark_ide.live.model_link import connect_failure, upstream_failure
from spark_ide.upstream import ErrorEvent, ProviderConfig, UpstreamError, open_client
from spark_ide.upstream.config import SERVER_KEY_LABEL
from spark_ide.upstream.errors import KEY_MISSING
from tests.support.responses_socket import ResponsesSocket
from tests.upstream.helpers import collect, turn
from tests.upstream.sse_fixtures import chat_server

GOOD = "sk-good-00000000000000000000"
BAD = "sk-bad-1111111111111111111zq42"
LABEL = "the room owner's stored openai key …zq42 (API keys page)"


async def test_a_refused_upgrade_names_the_key_not_its_text() -> None:
    async with ResponsesSocket(keys=frozenset({GOOD})) as fake:
        config = ProviderConfig(provider="openai", base_url=fake.base_url, model="gpt-test", api_key=BAD,
                                key_label=LABEL)
        with pytest.raises(UpstreamError) as refused:
            await open_client(config)
    assert refused.value.code == "authentication_failed"
    assert "HTTP 401" in refused.value.message and LABEL in refused.value.message
    assert BAD not in str(refused.value)
    assert fake.bearers == [BAD]  # refused at once, not tried again
    reason, error = connect_failure(refused.value)
    assert reason is FinishReason.PROVIDER_KEY_REJECTED and LABEL in error


async def test_a_key_revoked_while_the_socket_is_open_fails_the_answer_naming_it() -> None:
    async with ResponsesSocket(keys=frozenset({GOOD})) as fake:
        config = ProviderConfig(provider="openai", base_url=fake.base_url, model="gpt-test", api_key=GOOD,
                                key_label=LABEL)
        client = await open_client(config)
        try:
            fake.keys = frozenset({"sk-the-new-one-000000"})
            events = list(await collect(await client.start(turn("hi"))))
        finally:
            await client.close()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "authentication_failed" and not error.retryable
    assert "invalid_api_key" in error.message and LABEL in error.message
    reason, message = upstream_failure(error)
    assert reason is FinishReason.PROVIDER_KEY_REJECTED and GOOD not in message


async def test_a_refused_answer_over_chat_completions_names_the_key() -> None:
    body = json.dumps({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}).encode()
    config = ProviderConfig(provider="openai-compatible", base_url="http://llm.test/v1", model="llama",
                            api_key=BAD, key_label=LABEL)
    client = await open_client(config, http_transport=chat_server(body, status=401))
    try:
        events = list(await collect(await client.start(turn("hi"))))
    finally:
        await client.close()
    (error,) = events
    assert isinstance(error, ErrorEvent) and error.code == "authentication_failed"
    reason, message = upstream_failure(error)
    assert reason is FinishReason.PROVIDER_KEY_REJECTED
    assert LABEL in message and BAD not in message


def test_the_servers_key_is_labelled_from_the_environment() -> None:
    config = ProviderConfig.from_env({"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": GOOD, "SPARK_MODEL": "m"})
    assert config.key_label == SERVER_KEY_LABEL and GOOD not in repr(config)
    assert ProviderConfig.from_env({}).key_label == ""  # the local model server: no key


def test_a_missing_key_and_other_failures_have_their_own_reasons() -> None:
    reason, error = connect_failure(UpstreamError(KEY_MISSING, "add one on the API keys page"))
    assert reason is FinishReason.PROVIDER_KEY_MISSING and error.endswith("add one on the API keys page")
    reason, _ = connect_failure(OSError("connection refused"))
    assert reason is FinishReason.MODEL_UNAVAILABLE
