"""Bad input on the session socket gets a clear error event, and the socket stays open."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from tests.pairing.conftest import Live, LiveClient, connect, connect_viewer, say, token_for

pytestmark = [pytest.mark.django_db(transaction=True)]


async def error_after(client: LiveClient, frame: str | bytes) -> dict[str, Any]:
    before = len(client.of("error"))
    if isinstance(frame, bytes):
        await client.comm.send_to(bytes_data=frame)
    else:
        await client.comm.send_to(text_data=frame)
    await client.until(lambda e: e["type"] == "error" and len(client.of("error")) > before)
    return client.of("error")[-1]


async def still_open(client: LiveClient) -> None:
    await client.send({"type": "ping", "id": 7})
    pong = await client.until(lambda e: e["type"] == "pong" and e["id"] == 7)
    assert pong["t"] > 0


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", "malformed_json"),
        ("[1, 2]", "bad_message"),
        ('{"no": "type"}', "bad_message"),
        ('{"type": "launch_missiles"}', "unknown_type"),
        ('{"type": "prompt"}', "missing_field"),
        ('{"type": "prompt", "text": "   "}', "missing_field"),
        ('{"type": "prompt", "text": "hi", "effort": "maximum"}', "bad_field"),
        ('{"type": "steer", "text": 5}', "missing_field"),
        ('{"type": "revert"}', "missing_field"),
        ('{"type": "restore"}', "missing_field"),
        ('{"type": "restore", "turn": " "}', "missing_field"),
        ('{"type": "restore", "turn": ["t1"]}', "missing_field"),
        ('{"type": "resume", "after": "x"}', "missing_field"),
        ('{"type": "run"}', "missing_field"),
        ('{"type": "run.stop"}', "missing_field"),
        ('{"type": "run.input", "run": "r"}', "missing_field"),
    ],
)
async def test_bad_messages_get_an_error_and_the_socket_stays_open(
    live: Live, rooms: None, frame: str, code: str
) -> None:
    client = await connect(live)
    error = await error_after(client, frame)
    assert error["code"] == code
    assert error["message"]
    await still_open(client)
    await client.close()


@override_settings(SPARK_WS_MAX_MESSAGE_BYTES=1000)
async def test_an_oversized_message_is_refused(live: Live, rooms: None) -> None:
    client = await connect(live)
    error = await error_after(client, json.dumps({"type": "prompt", "text": "x" * 2000}))
    assert error["code"] == "too_large"
    error = await error_after(client, b"\x00\x02" + b"\x00" * 2000)
    assert error["code"] == "too_large"
    await still_open(client)
    await client.close()


async def test_a_malformed_binary_frame_is_refused(live: Live, rooms: None) -> None:
    client = await connect(live)
    assert (await error_after(client, b"\x07garbage"))["code"] == "malformed_binary"
    assert (await error_after(client, b"\x00\x02\x05\xff\xff\xff"))["code"] == "malformed_binary"
    await still_open(client)
    await client.close()


async def test_flooding_is_rate_limited(live: Live, rooms: None) -> None:
    client = await connect(live)
    for i in range(60):
        await client.send({"type": "ping", "id": i})
    await client.until(lambda e: e["type"] == "error" and e["code"] == "rate_limited")
    await client.close()


@pytest.mark.parametrize(
    "message",
    [
        {"type": "prompt", "text": "hi"},
        {"type": "steer", "text": "hi"},
        {"type": "stop"},
        {"type": "revert", "turn": "t1"},
        {"type": "restore", "turn": "t1"},
        {"type": "run", "path": "app.py"},
        {"type": "run.input", "run": "r", "text": "x\n"},
        {"type": "run.stop", "run": "r"},
    ],
)
async def test_a_viewer_may_not_drive(live: Live, rooms: None, django_user_model: Any, message: dict[str, Any]) -> None:
    client = await connect_viewer(live, django_user_model)
    hello = client.of("hello")[0]
    assert hello["role"] == "viewer"
    error = await error_after(client, json.dumps(message))
    assert error["code"] == "forbidden"
    await client.pump(0.2)
    assert not client.of("turn.started")
    await client.close()


async def test_a_viewer_may_not_edit_the_document(live: Live, rooms: None, django_user_model: Any) -> None:
    client = await connect_viewer(live, django_user_model)
    await client.pump(0.2)
    before = client.text("util.py")
    await client.type_text("util.py", 0, "# sneaky\n")
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "forbidden"
    owner = await connect(live)
    await owner.pump(0.3)
    assert owner.text("util.py") == before
    await client.close()
    await owner.close()


async def test_strangers_and_bad_tokens_are_refused_at_the_upgrade(
    live: Live, rooms: None, django_user_model: Any
) -> None:
    from spark_ide.asgi import application

    create_user = database_sync_to_async(django_user_model.objects.create_user)
    stranger = await create_user(username="eve", password="pw-eve-123")
    for headers, code in (([(b"authorization", f"Token {await token_for(stranger)}".encode())], 4403),
                          ([(b"authorization", b"Token spk_wrong")], 4401),
                          ([(b"origin", b"http://localhost")], 4403)):  # our origin, no cookie: nobody
        comm = WebsocketCommunicator(application, f"/ws/sessions/{live.session_id}/", headers=headers)
        connected, closed_with = await comm.connect(timeout=5)
        assert (connected, closed_with) == (False, code)
    comm = WebsocketCommunicator(
        application, "/ws/sessions/not-a-session/", headers=[(b"authorization", f"Token {live.owner_token}".encode())]
    )
    connected, _ = await comm.connect(timeout=5)
    assert not connected


async def test_a_cookie_from_another_origin_is_refused(live: Live, rooms: None, client: Any) -> None:
    from spark_ide.asgi import application

    await database_sync_to_async(client.force_login)(live.owner)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    path = f"/ws/sessions/{live.session_id}/"
    evil = WebsocketCommunicator(application, path, headers=[(b"cookie", cookie), (b"origin", b"https://evil.example")])
    assert not (await evil.connect(timeout=5))[0]
    good = WebsocketCommunicator(
        application, f"/ws/sessions/{live.session_id}/",
        headers=[(b"cookie", cookie), (b"origin", b"http://localhost"), (b"host", b"localhost")],
    )
    connected, _ = await good.connect(timeout=5)
    assert connected
    await good.disconnect()


async def test_resume_replays_what_came_before_the_join_or_asks_for_resync(
    live: Live, model_server: object, rooms: None
) -> None:
    client = await connect(live)
    last = client.events[0]["seq"]
    await client.close()
    writer = await connect(live)
    await writer.send({"type": "prompt", "text": say("hello there\n")})
    turn = (await writer.until(lambda e: e["type"] == "turn.finished"))["turn"]
    again = await connect(live)  # a script that resumes by message, not with ?after=
    await again.send({"type": "resume", "after": last})
    await again.until(lambda e: e["type"] == "turn.delta" and e["turn"] == turn)
    assert "".join(e["text"] for e in again.of("turn.delta", turn)) == "hello there\n"
    await again.send({"type": "resume", "after": 10**15})  # a seq never given out
    resync = await again.until(lambda e: e["type"] == "resync")
    assert resync["reason"]
    await writer.close()
    await again.close()


async def test_a_room_that_cannot_be_opened_closes_with_try_again(
    live: Live, rooms: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis (the room's lease) or the database down: one warning line and close code 1013,
    which the page retries after its back-off; no traceback, no 1011."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from spark_ide.asgi import application
    from spark_ide.pairing.adapter import ROOMS

    async def down(workspace: str) -> None:
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(ROOMS, "attach", down)
    logger = logging.getLogger("spark_ide.pairing.consumer")  # the project's logging may not propagate
    monkeypatch.setattr(logger, "handlers", [*logger.handlers, caplog.handler])
    headers = [(b"authorization", f"Token {live.owner_token}".encode())]
    comm = WebsocketCommunicator(application, f"/ws/sessions/{live.session_id}/", headers=headers)
    connected, _ = await comm.connect(timeout=10)
    assert connected
    frame = await comm.receive_output(timeout=5)
    assert frame == {"type": "websocket.close", "code": 1013}
    warned = {id(r): r for r in caplog.records if "could not open the room" in r.getMessage()}  # once per handler
    assert len(warned) == 1 and next(iter(warned.values())).exc_info is None


async def test_a_connect_reads_on_one_lookup_trip_and_never_waits_on_the_rooms_database_thread(
    live: Live, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reconnect storm's connects and disconnects: no hop to the thread the rooms' storage
    writes share (channels' ``aclose_old_connections``), and one trip to a lookup thread each
    for the user, the session and the role."""
    import channels.consumer
    import channels.generic.websocket

    from spark_ide.pairing import lookups

    hops: list[str] = []

    async def no_hop() -> None:
        hops.append("aclose_old_connections")

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", no_hop)
    monkeypatch.setattr(channels.generic.websocket, "aclose_old_connections", no_hop)
    submit = lookups._pool.submit
    trips: list[object] = []

    def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        trips.append(fn)
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(lookups._pool, "submit", counted)
    for _ in range(3):
        client = await connect(live)  # to its hello
        await client.comm.disconnect()  # waits for the consumer to finish
    assert hops == []
    assert len(trips) == 3
