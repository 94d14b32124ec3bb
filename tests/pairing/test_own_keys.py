"""Bring your own key through the whole room (issue 34): the room's Pilot, its model
connection and the OpenAI-faithful fake Responses socket, which refuses an upgrade whose bearer
key it does not accept (HTTP 401, ``invalid_api_key``) and records each upgrade's key.

The owner's stored key is the one the provider sees; a deleted key falls back to the server's
at the next turn; "use my keys only" without a key refuses the turn before any request; a
refused key ends the turn ``provider_key_rejected`` naming the key by its last 4 (or as the
server's). No key ever reaches an event, a page or a log record."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from spark_ide.accounts.provider_keys import own_keys_only_set, provider_key_delete, provider_key_store
from spark_ide.pairing.owner_keys import owner_api_key
from tests.support.responses_socket import ResponsesSocket, message

from .conftest import Live, LiveClient, connect

pytestmark = [pytest.mark.django_db(transaction=True)]

SERVER_KEY = "sk-server-000000000000000000SRVR"
OWNER_KEY = "sk-owner-1111111111111111111abcd"
REVOKED_KEY = "sk-revoked-222222222222222222w9x8"


@pytest.fixture
async def upstream(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ResponsesSocket]:
    """The fake OpenAI socket, accepting the server's key and the owner's; the IDE points at it."""
    async with ResponsesSocket(keys=frozenset({SERVER_KEY, OWNER_KEY})) as fake:
        for name, value in {
            "SPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": SERVER_KEY,
            "SPARK_MODEL": "gpt-test", "SPARK_EDIT_STYLE": "edits",
        }.items():
            monkeypatch.setenv(name, value)
        yield fake


async def turn(client: LiveClient, prompt: str) -> dict[str, Any]:
    """Prompt and wait for the turn's end."""
    await client.send({"type": "prompt", "text": prompt})
    started = await client.until(lambda e: e["type"] == "turn.started" and e["prompt"] == prompt)
    return await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == started["turn"])


async def store(live: Live, key: str) -> int:
    row = await database_sync_to_async(provider_key_store)(user=live.owner, provider="openai", key=key)
    return int(row.pk)


def nowhere(client: LiveClient, caplog: pytest.LogCaptureFixture, *keys: str) -> None:
    """None of ``keys`` in any event the page got, nor in any log record."""
    sent = json.dumps(client.events)
    logged = caplog.text
    for key in keys:
        assert key not in sent and key not in logged


async def test_the_owners_key_is_used_then_the_servers_once_it_is_deleted(
    live: Live, upstream: ResponsesSocket, rooms: None, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="spark_ide")
    key_id = await store(live, OWNER_KEY)
    client = await connect(live)
    upstream.answer(message("Hello from your key."))
    end = await turn(client, "first")
    assert (end["status"], end["reason"]) == ("completed", "no_changes")
    assert upstream.bearers and set(upstream.bearers) == {OWNER_KEY}  # every socket, the hot spare's too
    seen = len(upstream.bearers)

    await database_sync_to_async(provider_key_delete)(user=live.owner, key_id=key_id)
    upstream.answer(message("Hello from the server's key."))
    end = await turn(client, "second")
    assert (end["status"], end["reason"]) == ("completed", "no_changes")
    assert upstream.bearers[seen:] and set(upstream.bearers[seen:]) == {SERVER_KEY}  # a new connection
    assert len(upstream.requests) == 2

    page = Client()
    await database_sync_to_async(page.force_login)(live.owner)
    html = (await database_sync_to_async(page.get)(f"/sessions/{live.session_id}/")).content.decode()
    assert "data-session" in html or live.session_id in html
    assert OWNER_KEY not in html and SERVER_KEY not in html
    nowhere(client, caplog, OWNER_KEY, SERVER_KEY)


async def test_a_key_added_while_the_room_is_open_is_used_from_the_next_turn(
    live: Live, upstream: ResponsesSocket, rooms: None,
) -> None:
    client = await connect(live)
    upstream.answer(message("Server."))
    await turn(client, "first")
    assert set(upstream.bearers) == {SERVER_KEY}
    seen = len(upstream.bearers)
    await store(live, OWNER_KEY)
    upstream.answer(message("Owner."))
    end = await turn(client, "second")
    assert end["reason"] == "no_changes"
    assert upstream.bearers[seen:] and set(upstream.bearers[seen:]) == {OWNER_KEY}


async def test_my_keys_only_without_a_key_refuses_the_turn_before_any_request(
    live: Live, upstream: ResponsesSocket, rooms: None,
) -> None:
    await database_sync_to_async(own_keys_only_set)(user=live.owner, value=True)
    client = await connect(live)
    end = await turn(client, "first")
    assert (end["status"], end["reason"]) == ("failed", "provider_key_missing")
    assert "uses only their own keys and has no openai key stored" in end["error"]
    assert "API keys page" in end["error"]
    assert upstream.bearers == [] and upstream.requests == []  # nothing reached the provider


async def test_a_refused_stored_key_ends_the_turn_naming_it_by_its_last_4(
    live: Live, upstream: ResponsesSocket, rooms: None, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="spark_ide")
    await store(live, REVOKED_KEY)
    client = await connect(live)
    end = await turn(client, "first")
    assert (end["status"], end["reason"]) == ("failed", "provider_key_rejected")
    assert "HTTP 401" in end["error"]
    assert "the room owner's stored openai key …w9x8" in end["error"]
    assert upstream.bearers and set(upstream.bearers) == {REVOKED_KEY}
    assert upstream.requests == []
    nowhere(client, caplog, REVOKED_KEY)


async def test_a_refused_server_key_is_named_as_the_servers(
    live: Live, upstream: ResponsesSocket, rooms: None,
) -> None:
    upstream.keys = frozenset({OWNER_KEY})  # the server's key was revoked
    client = await connect(live)
    end = await turn(client, "first")
    assert (end["status"], end["reason"]) == ("failed", "provider_key_rejected")
    assert "the server's key (OPENAI_API_KEY)" in end["error"]
    assert SERVER_KEY not in end["error"]


def test_a_workspace_gone_meanwhile_uses_the_servers_key(live: Live) -> None:
    assert owner_api_key(uuid.UUID(int=7), "openai") is None
    provider_key_store(user=live.owner, provider="openai", key=OWNER_KEY)
    found = owner_api_key(live.workspace_id, "openai")
    assert found is not None and found.secret == OWNER_KEY and found.last4 == "abcd"
    assert owner_api_key(live.workspace_id, "local") is None
