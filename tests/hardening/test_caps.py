"""Per-user caps (issue 16), each answered with a clear error: open session sockets, workspaces,
a prompt's length, one Yjs update's size, and a workspace document's total size (an edit past
it is undone for everyone, and the room goes on consistent). Caps are set small here; their
defaults are in spark_ide/settings.py and docs/security.md."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client
from pycrdt import Map, Text, create_update_message

from spark_ide.live.events import CloseCode
from spark_ide.pairing.adapter import ROOMS
from spark_ide.pairing.consumer import SOCKETS
from tests.pairing.conftest import FILES, Live, LiveClient, connect

pytestmark = [pytest.mark.django_db(transaction=True)]


async def error_after(
    client: LiveClient, *, text: str | None = None, edit: tuple[str, int, str] | None = None
) -> dict[str, Any]:
    before = len(client.of("error"))
    if text is not None:
        await client.comm.send_to(text_data=text)
    else:
        assert edit is not None
        await client.type_text(*edit)
    await client.until(lambda e: e["type"] == "error" and len(client.of("error")) > before)
    return client.of("error")[-1]


async def test_a_users_sockets_past_the_cap_are_refused_with_a_reason(live: Live, rooms: None, settings: Any) -> None:
    from spark_ide.asgi import application

    settings.SPARK_MAX_SOCKETS_PER_USER = 3
    held = [await connect(live) for _ in range(3)]
    headers = [(b"authorization", f"Token {live.owner_token}".encode())]
    fourth = WebsocketCommunicator(application, f"/ws/sessions/{live.session_id}/", headers=headers)
    connected, _ = await fourth.connect(timeout=10)
    assert connected  # accepted only to say why
    error = json.loads((await fourth.receive_output(timeout=5))["text"])
    assert error["type"] == "error" and error["code"] == "rate_limited"
    assert "at most 3" in error["message"]
    closed = await fourth.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": CloseCode.TOO_MANY_SOCKETS}
    assert type(closed["code"]) is int  # autobahn (Daphne) refuses any other type, an IntEnum too
    await held.pop().close()  # one tab closed: room for another
    held.append(await connect(live))
    for client in held:
        await client.close()
    assert SOCKETS.local.open.get(live.owner.pk) is None  # every socket given back


async def test_a_socket_whose_application_is_killed_leaves_nothing_behind(live: Live, rooms: None) -> None:
    """Daphne kills an application that has not ended 10 s after its socket went (a connect
    still waiting in a reconnect storm): no disconnect runs, yet the socket leaves its room and
    gives its place back (a killed one stayed in the room for good, its outbox filling)."""
    killed, other = await connect(live), await connect(live)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None and len(room.members()) == 2
    assert SOCKETS.local.open.get(live.owner.pk) == 2
    killed.comm.future.cancel()  # what Daphne's application_close_timeout does
    with contextlib.suppress(asyncio.CancelledError):
        await killed.comm.future
    assert [conn.username for conn in room.members()] == ["ada"] and len(room.members()) == 1
    assert SOCKETS.local.open.get(live.owner.pk) == 1
    presence = await other.until(lambda e: e["type"] == "presence" and e["participants"][0]["connections"] == 1)
    assert len(presence["participants"]) == 1
    await other.close()
    assert SOCKETS.local.open.get(live.owner.pk) is None


@pytest.mark.parametrize("way", ["form", "api"])
def test_workspaces_past_the_cap_are_refused_with_a_message(live: Live, settings: Any, way: str) -> None:
    settings.SPARK_MAX_WORKSPACES_PER_USER = 2  # the owner has one (the live fixture's)
    browser = Client()
    browser.force_login(live.owner)
    api = Client(headers={"Authorization": f"Token {live.owner_token}"})
    if way == "form":
        assert browser.post("/workspaces/new", {"name": "second"}).status_code == 302
        page = browser.post("/workspaces/new", {"name": "third"}, follow=True)
        assert "you have 2 workspaces, the most one person may hold" in page.content.decode()
    else:
        assert api.post("/api/workspaces", {"name": "second"}, content_type="application/json").status_code == 201
        refused = api.post("/api/workspaces", {"name": "third"}, content_type="application/json")
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "too_many_workspaces"
    assert live.owner.workspaces.count() == 2


async def test_a_prompt_past_the_cap_is_refused(live: Live, rooms: None, settings: Any) -> None:
    settings.SPARK_MAX_PROMPT_CHARS = 50
    client = await connect(live)
    error = await error_after(client, text=json.dumps({"type": "prompt", "text": "x" * 51}))
    assert error["code"] == "too_long" and "50" in error["message"]
    await client.close()


async def test_a_yjs_update_past_the_cap_is_refused_and_the_document_unchanged(
    live: Live, rooms: None, settings: Any
) -> None:
    settings.SPARK_MAX_YJS_UPDATE_BYTES = 1000
    client = await connect(live)
    await client.until_true(lambda: client.text("util.py") == FILES["util.py"])
    error = await error_after(client, edit=("util.py", 0, "y" * 2000))
    assert error["code"] == "too_large" and "1000 bytes" in error["message"]
    # The room never took it: a newcomer gets the document as it was, and edits it.
    newcomer = await connect(live)
    await newcomer.until_true(lambda: newcomer.text("util.py") == FILES["util.py"])
    await newcomer.type_text("util.py", 0, "# small\n")
    third = await connect(live)
    await third.until_true(lambda: third.text("util.py") == "# small\n" + FILES["util.py"])
    for each in (client, newcomer, third):
        await each.close()


async def test_an_edit_past_the_document_size_cap_is_undone_for_everyone(
    live: Live, rooms: None, settings: Any
) -> None:
    size = sum(len(text.encode()) for text in FILES.values())
    settings.SPARK_MAX_DOCUMENT_BYTES = size + 100  # read when the room opens
    typist, watcher = await connect(live), await connect(live)
    for client in (typist, watcher):
        await client.until_true(lambda c=client: c.text("util.py") == FILES["util.py"])
    await typist.type_text("util.py", 0, "a" * 60)  # within the cap
    await watcher.until_true(lambda: watcher.text("util.py") == "a" * 60 + FILES["util.py"])

    error = await error_after(typist, edit=("util.py", 60, "é" * 30))  # 60 more bytes: 20 too many
    assert error["code"] == "too_large"
    assert f"{size + 100} bytes" in error["message"] and f"{size + 120}" in error["message"]
    # Undone for everyone, the typist's own copy included: all hold the document as it was.
    expected = "a" * 60 + FILES["util.py"]
    await typist.until_true(lambda: typist.text("util.py") == expected)
    await watcher.until_true(lambda: watcher.text("util.py") == expected)
    # A new file past the cap goes too; a small edit after it still works and reaches everyone.
    files = typist.doc.get("files", type=Map)
    assert files is not None
    before = typist.doc.get_state()
    files["big.py"] = Text("b" * 200)
    await typist.comm.send_to(bytes_data=create_update_message(typist.doc.get_update(before)))
    await typist.until(lambda e: e["type"] == "error" and len(typist.of("error")) == 2)
    await typist.until_true(lambda: typist.text("big.py") is None)
    await typist.type_text("util.py", 0, "ok")
    final = "ok" + expected
    await watcher.until_true(lambda: watcher.text("util.py") == final and watcher.text("big.py") is None)
    newcomer = await connect(live)
    await newcomer.until_true(lambda: newcomer.text("util.py") == final and newcomer.text("big.py") is None)
    for client in (typist, watcher, newcomer):
        await client.close()
