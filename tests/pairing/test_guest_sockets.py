"""Guests on the session socket: signed in by the cookie they got when they gave a name; the
role of their invite decides what they may do; removed or revoked, they are hung up on."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from spark_ide.accounts.models import Guest
from spark_ide.pairing.models import Session
from tests.pairing.conftest import Live, LiveClient, connect, say

pytestmark = [pytest.mark.django_db(transaction=True)]


def _join(live: Live, role: str, name: str) -> tuple[str, int]:
    """Open the invite in a fresh browser, give a name: the guest's session cookie and id."""
    session = Session.objects.get(pk=live.session_id)
    browser = Client()
    response = browser.post(f"/sessions/{session.id}/join/{getattr(session, f'{role}_key')}", {"name": name})
    assert response.status_code == 302
    return browser.cookies["sessionid"].value, Guest.objects.get(name=name).user_id


async def _socket(live: Live, cookie: str) -> WebsocketCommunicator:
    from spark_ide.asgi import application

    headers = [(b"cookie", f"sessionid={cookie}".encode()), (b"origin", b"http://localhost"), (b"host", b"localhost")]
    return WebsocketCommunicator(application, f"/ws/sessions/{live.session_id}/", headers=headers)


async def guest(live: Live, role: str, name: str = "Grace") -> tuple[LiveClient, str, int]:
    cookie, user_id = await sync_to_async(_join)(live, role, name)
    comm = await _socket(live, cookie)
    connected, _ = await comm.connect(timeout=10)
    assert connected
    client = LiveClient(comm)
    hello = await client.until(lambda e: e["type"] == "hello")
    assert hello["role"] == role
    return client, cookie, user_id


async def owner_posts(live: Live, path: str, data: dict[str, str]) -> int:
    def post() -> int:
        owner = Client()
        owner.force_login(live.owner)
        return int(owner.post(f"/sessions/{live.session_id}/{path}", data).status_code)

    return await sync_to_async(post)()


async def refused(live: Live, cookie: str) -> bool:
    comm = await _socket(live, cookie)
    connected, _ = await comm.connect(timeout=5)
    return not connected


async def hung_up(client: LiveClient) -> None:
    error = await client.until(lambda e: e["type"] == "error")
    assert (error["code"], error["message"]) == ("forbidden", "you were removed from this workspace")
    with pytest.raises(ConnectionError):
        await client.until(lambda e: False, timeout=2)


async def test_a_guest_viewer_watches_but_cannot_prompt_steer_or_edit(live: Live, rooms: None) -> None:
    viewer, _, _ = await guest(live, "viewer")
    await viewer.send({"type": "prompt", "text": say("hi")})
    await viewer.until(lambda e: e["type"] == "error")
    await viewer.send({"type": "steer", "text": "no"})
    await viewer.until(lambda e: e["type"] == "error" and len(viewer.of("error")) == 2)
    await viewer.until_true(lambda: viewer.text("util.py") == "X = 1\n")
    await viewer.type_text("util.py", 0, "# sneaky\n")
    await viewer.until(lambda e: e["type"] == "error" and len(viewer.of("error")) == 3)
    assert [(e["code"], e.get("ref")) for e in viewer.of("error")] == [
        ("forbidden", "prompt"), ("forbidden", "steer"), ("forbidden", None),
    ]
    owner = await connect(live)
    await owner.pump(0.3)
    assert owner.text("util.py") == "X = 1\n"
    assert not owner.of("turn.started")
    await viewer.close()
    await owner.close()


async def test_a_guest_collaborator_edits_and_prompts(live: Live, model_server: object, rooms: None) -> None:
    mate, _, _ = await guest(live, "collaborator", name="Cole")
    owner = await connect(live)
    await mate.until_true(lambda: mate.text("util.py") == "X = 1\n")
    await mate.type_text("util.py", 0, "# by Cole\n")
    await owner.until_true(lambda: owner.text("util.py") == "# by Cole\nX = 1\n")
    await mate.send({"type": "prompt", "text": say("Hello from the guest.\n")})
    finished = await owner.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "completed"
    started = owner.of("turn.started")[0]
    assert started["author"] == "Cole (guest)"
    await mate.close()
    await owner.close()


async def test_removing_a_guest_hangs_up_at_once_and_bars_the_way_back(live: Live, rooms: None) -> None:
    grace, cookie, user_id = await guest(live, "collaborator")
    owner = await connect(live)
    await owner.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    assert await owner_posts(live, "members", {"remove": str(user_id)}) == 200
    await hung_up(grace)
    await owner.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 1)
    assert await refused(live, cookie)
    await owner.send({"type": "ping", "id": 1})
    await owner.until(lambda e: e["type"] == "pong")
    await owner.close()


async def test_a_new_link_hangs_up_on_the_guests_it_revokes(live: Live, rooms: None) -> None:
    vic, vic_cookie, _ = await guest(live, "viewer", name="Vic")
    cole, _, _ = await guest(live, "collaborator", name="Cole")
    assert await owner_posts(live, "invites", {"role": "viewer"}) == 200
    await hung_up(vic)
    assert await refused(live, vic_cookie)
    await cole.send({"type": "ping", "id": 2})
    pong = await cole.until(lambda e: e["type"] == "pong")
    assert pong["id"] == 2
    assert cole.of("error") == []
    await cole.close()
