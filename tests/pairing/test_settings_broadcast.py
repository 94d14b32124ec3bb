"""A change of the workspace's settings reaches every page open on it (``workspace.settings``):
a PATCH of the test-rounds switch on one page, the event on the sockets of the room, a refused
PATCH tells nobody, and with no room open the PATCH only saves."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.test import Client

from spark_ide.pairing.adapter import ROOMS
from tests.pairing.conftest import Live, LiveClient, connect, connect_viewer


def patch(live: Live, body: Any, token: str | None = None) -> Any:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token or live.owner_token}"
    return client.patch(f"/api/workspaces/{live.workspace_id}", body, content_type="application/json")


def told(client: LiveClient) -> list[tuple[dict[str, Any], str]]:
    return [(event["changed"], event["by"]) for event in client.of("workspace.settings")]


async def test_a_patch_of_the_switch_is_told_to_every_page_of_the_room(
    live: Live, model_server: Any, rooms: None, django_user_model: Any,
) -> None:
    owner = await connect(live)
    viewer = await connect_viewer(live, django_user_model)
    answer = await database_sync_to_async(patch)(live, {"auto_test": False})
    assert answer.status_code == 200 and answer.json()["auto_test"] is False
    for client in (owner, viewer):
        await client.until(lambda e: e["type"] == "workspace.settings")
        assert told(client) == [({"auto_test": False}, "ada")]

    refused = await database_sync_to_async(patch)(live, {"auto_test": "yes"})  # nothing changed: nobody told
    assert refused.status_code == 400
    await database_sync_to_async(patch)(live, {"auto_test": None})  # back to the server's default
    for client in (owner, viewer):
        await client.until(lambda e: e["type"] == "workspace.settings" and e["changed"] == {"auto_test": None})
        assert told(client) == [({"auto_test": False}, "ada"), ({"auto_test": None}, "ada")]
    await owner.close()
    await viewer.close()

    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    await room.close()
    closed = await database_sync_to_async(patch)(live, {"auto_test": True})  # no room: saved, nobody to tell
    assert closed.status_code == 200 and closed.json()["auto_test"] is True
