from __future__ import annotations

from .protocol_client import Client, text_of, types_of


async def test_a_second_create_waits_behind_the_running_response(ws: Client) -> None:
    await ws.create("[rate:500][say]" + "first " * 20 + "[/say]")
    await ws.create("[say]second[/say]")
    events = await ws.until("response.completed")
    assert "response.created" not in types_of(events[1:])
    following = await ws.response()
    assert following[0]["type"] == "response.created"
    assert text_of(following) == "second"


async def test_queued_creates_run_in_order(ws: Client) -> None:
    for word in ("one", "two", "three"):
        await ws.create(f"[say]{word}[/say]")
    texts = [text_of(await ws.response()) for _ in range(3)]
    assert texts == ["one", "two", "three"]


async def test_errors_for_queued_messages_keep_their_place(ws: Client) -> None:
    await ws.create("[rate:500][say]" + "busy " * 20 + "[/say]")
    await ws.send({"type": "response.create", "input": "no model"})
    await ws.create("[say]after[/say]")
    first = await ws.response()
    error = await ws.recv()
    last = await ws.response()
    assert first[-1]["type"] == "response.completed"
    assert error["error"]["code"] == "missing_required_parameter"
    assert text_of(last) == "after"
