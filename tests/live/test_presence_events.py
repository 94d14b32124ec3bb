"""Presence names, roles and colours (stable per person, the same everywhere), and who stopped,
steered or reverted a turn (``turn.finished`` ``by``): the events alone, then through the real
session socket, Pilot and scripted model server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.live.events import (
    FinishReason,
    Participant,
    Presence,
    Role,
    TurnFinished,
    TurnStatus,
    encode,
    turn_event_from,
)
from spark_ide.pairing.models import Participant as Member
from tests.pairing import conftest as pairing
from tests.pairing.conftest import Live, LiveClient, connect, say, token_for

# The real session socket, Pilot and scripted model server, as the pairing tests have them.
live = pairing.live
model_server = pairing.model_server
rooms = pairing.rooms

HEX = re.compile(r"#[0-9a-f]{6}")
SLOW = say("".join(f"line {i}\n" for i in range(400)), rate=200)


# -- the events -------------------------------------------------------------------------------


def test_a_colour_is_a_hex_colour_that_stays_the_same_for_the_same_person() -> None:
    first = Participant.colour_for(7, "ada")
    assert HEX.fullmatch(first)
    assert Participant.colour_for(7, "ada") == first
    assert Participant.colour_for(7, "ada renamed") == first  # the id decides, not the name
    assert Participant.of(7, "ada", Role.OWNER).colour == first


def test_people_get_different_colours() -> None:
    colours = [Participant.colour_for(user_id, "x") for user_id in range(1, 41)]
    assert len(set(colours)) == 40
    assert Participant.colour_for(None, "Grace (guest)") != Participant.colour_for(None, "Cole (guest)")
    assert HEX.fullmatch(Participant.colour_for(None, "Grace (guest)"))


def test_a_name_label_in_white_stays_readable_on_every_colour() -> None:
    for user_id in range(1, 500):
        colour = Participant.colour_for(user_id, "x")
        channels = (int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255)
        assert 1.05 / (Participant.luminance(channels) + 0.05) >= 4.5, colour


def test_presence_carries_each_person_once_with_colour_and_tab_count() -> None:
    event = Presence(participants=(Participant.of(3, "ada", Role.OWNER, connections=2),
                                   Participant.of(4, "vera", Role.VIEWER)), joined=5)
    sent = json.loads(encode(event, 12))
    assert sent == {
        "type": "presence", "seq": 12, "participants": [
            {"user": "ada", "role": "owner", "user_id": 3, "colour": Participant.colour_for(3, "ada"),
             "connections": 2},
            {"user": "vera", "role": "viewer", "user_id": 4, "colour": Participant.colour_for(4, "vera"),
             "connections": 1},
        ], "joined": 5,
    }


def test_by_is_sent_only_when_a_person_ended_the_turn_and_survives_the_event_log() -> None:
    stopped = TurnFinished(turn="t1", status=TurnStatus.CANCELLED, reason=FinishReason.STOPPED, metrics={}, by="ben")
    assert stopped.payload()["by"] == "ben"
    assert turn_event_from(stopped.payload()) == stopped
    answered = TurnFinished(turn="t2", status=TurnStatus.COMPLETED, reason=FinishReason.ANSWERED, metrics={})
    assert "by" not in answered.payload()


# -- through the session socket ---------------------------------------------------------------


async def _mate(live: Live, username: str, role: str) -> tuple[Any, str]:
    """Another user with ``role`` in the session, and their API token."""
    users = live.owner.__class__.objects
    mate = await database_sync_to_async(users.create_user)(username=username, password="pw-9-xyz")
    await database_sync_to_async(Member.objects.create)(session_id=live.session_id, user=mate, role=role)
    return mate, await token_for(mate)


def _people(event: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {person["user"]: person for person in event["participants"]}


@pytest.mark.django_db(transaction=True)
async def test_presence_names_each_person_once_in_their_own_colour(live: Live, rooms: None) -> None:
    vera, vera_token = await _mate(live, "vera", "viewer")
    owner = await connect(live)
    second_tab = await connect(live)
    viewer = await connect(live, token=vera_token)
    event = await owner.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    people = _people(event)
    assert people["ada"]["connections"] == 2 and people["vera"]["connections"] == 1
    assert (people["ada"]["role"], people["vera"]["role"]) == ("owner", "viewer")
    assert (people["ada"]["user_id"], people["vera"]["user_id"]) == (live.owner.pk, vera.pk)
    assert people["ada"]["colour"] != people["vera"]["colour"]
    assert people["ada"]["colour"] == Participant.colour_for(live.owner.pk, "ada")
    seen_by_viewer = await viewer.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2)
    assert _people(seen_by_viewer)["ada"]["colour"] == people["ada"]["colour"]  # the same in every browser

    assert event["joined"] == 3  # sockets that came since the room opened

    await second_tab.close()
    event = await owner.until(lambda e: e["type"] == "presence" and len(e["participants"]) == 2
                              and _people(e)["ada"]["connections"] == 1)
    assert _people(event)["ada"]["colour"] == people["ada"]["colour"]  # stable across joins and leaves
    assert event["joined"] == 3
    # A tab closed and another opened within one announcement: the counts are as they were,
    # `joined` tells that someone came (their pages re-send their cursors on it).
    third_tab = await connect(live)
    await viewer.close()
    event = await owner.until(lambda e: e["type"] == "presence" and e["joined"] == 4)
    await third_tab.close()
    await owner.close()


async def _running(client: LiveClient, prompt: str) -> str:
    await client.send({"type": "prompt", "text": prompt})
    started = await client.until(lambda e: e["type"] == "turn.started" and e["prompt"] == prompt)
    await client.until(lambda e: e["type"] == "turn.delta" and e["turn"] == started["turn"])
    return str(started["turn"])


@pytest.mark.django_db(transaction=True)
async def test_the_turn_finished_event_says_who_stopped_steered_or_reverted_it(
    live: Live, model_server: object, rooms: None
) -> None:
    _, cole_token = await _mate(live, "cole", "collaborator")
    owner = await connect(live)
    mate = await connect(live, token=cole_token)

    steered = await _running(owner, SLOW)
    await mate.send({"type": "steer", "text": SLOW})
    finished = await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] == steered)
    assert (finished["status"], finished["reason"], finished["by"]) == ("steered", "steered", "cole")
    successor = await owner.until(lambda e: e["type"] == "turn.started" and e["steered_from"] == steered)
    assert successor["author"] == "cole"
    await owner.until(lambda e: e["type"] == "turn.delta" and e["turn"] == successor["turn"])

    await owner.send({"type": "stop"})
    finished = await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] == successor["turn"])
    assert (finished["status"], finished["reason"], finished["by"]) == ("cancelled", "stopped", "ada")

    reverted = await _running(mate, SLOW.replace("line", "row"))
    await owner.send({"type": "revert", "turn": reverted})
    finished = await mate.until(lambda e: e["type"] == "turn.finished" and e["turn"] == reverted)
    assert (finished["reason"], finished["by"]) == ("reverted", "ada")

    done = await _running(owner, say("short answer\n"))
    finished = await owner.until(lambda e: e["type"] == "turn.finished" and e["turn"] == done)
    assert finished["status"] == "completed" and "by" not in finished  # nobody ended it

    again = await connect(live)  # a new page's transcript comes from the event log: `by` is kept
    replayed = await again.until(lambda e: e["type"] == "turn.finished" and e["turn"] == steered)
    assert replayed["by"] == "cole"
    for client in (again, mate, owner):
        await client.close()
