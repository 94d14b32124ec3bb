"""The room's prompt queue over the session socket (issue 32): every driver sees it (a page
joining is told it after hello), drivers change it, a viewer's change is refused ``forbidden``,
bad asks get clear errors and change nothing, and the prompts run in the queue's order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pairing.conftest import Live, connect, connect_viewer, refused, say

pytestmark = [pytest.mark.django_db(transaction=True)]

LONG = "".join(f"Line {n} of a long answer.\n" for n in range(400))


def queue_of(event: dict[str, Any]) -> list[tuple[str, int]]:
    return [(item["prompt"], item["position"]) for item in event["items"]]


async def test_drivers_change_the_shared_queue_a_viewer_cannot_and_it_runs_in_order(
    live: Live, model_server: object, rooms: None, django_user_model: Any,
) -> None:
    owner = await connect(live)
    viewer = await connect_viewer(live, django_user_model)
    await owner.send({"type": "prompt", "text": say(LONG, rate=400)})
    running = (await owner.until(lambda e: e["type"] == "turn.started"))["turn"]
    one, two = say("one\n"), say("two\n")
    for text in (one, two):
        await owner.send({"type": "prompt", "text": text})
    state = await owner.until(lambda e: e["type"] == "queue" and len(e["items"]) == 2)
    assert queue_of(state) == [(one, 1), (two, 2)] and state["items"][0]["author"] == "ada"
    first, second = (item["turn"] for item in state["items"])
    await viewer.until(lambda e: e["type"] == "queue" and len(e["items"]) == 2)  # everyone sees it

    forbidden = await refused(viewer, {"type": "queue.edit", "turn": first, "text": "mine"})
    assert forbidden["code"] == "forbidden"
    unknown = await refused(owner, {"type": "queue.delete", "turn": "nosuchturn"})
    assert unknown["code"] == "not_queued" and "nothing changed" in unknown["message"]
    bad = await refused(owner, {"type": "queue.merge", "turns": [first, 7]})
    assert bad["code"] == "bad_field" and "'turns'" in bad["message"]

    edited = say("one edited\n")
    await owner.send({"type": "queue.edit", "turn": first, "text": edited})
    await owner.send({"type": "queue.move", "turn": second, "position": 1})
    moved = await owner.until(lambda e: e["type"] == "queue" and queue_of(e) == [(two, 1), (edited, 2)])
    assert len(owner.of("queue")) == 4  # two added, one edit, one move: the refused asks changed nothing

    page = await connect(live)  # a reload: told the queue after hello
    told = await page.until(lambda e: e["type"] == "queue")
    assert told["items"] == moved["items"]
    assert page.events.index(told) > page.events.index(page.of("hello")[0])

    await owner.send({"type": "stop"})
    await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] == running)
    for turn in (second, first):
        await owner.until(lambda e, turn=turn: e["type"] == "turn.finished" and e["turn"] == turn)
    started = [e["prompt"] for e in owner.of("turn.started")[1:]]
    assert started == [two, edited]
    for client in (owner, viewer, page):
        await client.close()
