"""Steering by editing (issue 33) through the real stack: the session socket, the room, its
Pilot and our model server with the scripted engine (which keeps each generation's prompt and
how it ended). The model streams an edit block slowly; a person changes a line it has
written. Their change carries a ``[say]`` directive, so the re-prompt's diff of the region is
what picks the new answer: the new answer streaming proves the diff reached the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.live.policy import AiPolicy
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import DatabaseRoomStore
from spark_ide.pairing.models import Participant, Role
from tests.pairing.conftest import Live, LiveClient, connect, point_the_ide_at, say, token_for
from tests.support.recording_engine import RecordingEngine, RecordingServer, recording_engine

pytestmark = [pytest.mark.django_db(transaction=True)]

FILLER = "".join(f"    # step {i} of the long way\n" for i in range(40))
SLOW_EDIT = (
    "Rewriting sub.\n"
    '<edit path="app.py">\n<old_text>\ndef sub(a, b):\n    return a - b\n</old_text>\n<new_text>\n'
    "def sub(a, b):\n    result = a - b\n" + FILLER + "    return result\n</new_text>\n</edit>\n"
)
WRITTEN = "    result = a - b\n"
MINE = "  # [say]Kept your edit.[/say]"  # the person's text: what they add to the model's line
NEW_ANSWER = "Kept your edit."


@pytest.fixture
def quick(settings: Any) -> None:
    settings.SPARK_EDIT_STEER_IDLE_MS = 40


async def start_slow_turn(client: LiveClient) -> str:
    """A turn writing a long block into app.py; returns its id once its second line is in."""
    await client.send({"type": "prompt", "text": say(SLOW_EDIT, rate=250), "path": "app.py"})
    turn: str = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until_true(lambda: WRITTEN in (client.text("app.py") or ""))
    return turn


async def edit_written_line(client: LiveClient, line: str = WRITTEN, mine: str = MINE, path: str = "app.py") -> None:
    """Add ``mine`` at the end of the written ``line``, as a keystroke's update."""
    text = client.text(path) or ""
    await client.type_text(path, text.index(line) + len(line) - 1, mine)


async def test_an_edit_of_the_line_being_written_steers_the_turn(
    live: Live, model_server: ModelServer, rooms: None, quick: None,
) -> None:
    engine = recording_engine(model_server)
    client, watcher = await connect(live), await connect(live)
    old = await start_slow_turn(client)
    await edit_written_line(client)

    steered = await client.until(lambda e: e["type"] == "turn.edit_steered")
    assert steered["turn"] == old and steered["path"] == "app.py" and steered["by"] == "ada"
    assert steered["why"] == "idle"
    assert f"-{WRITTEN}" in steered["diff"] and f"+    result = a - b{MINE}\n" in steered["diff"]
    # The line they changed (and lines the model wrote after it meanwhile, when the diff joins them).
    assert steered["lines"][0] == 6
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == old)
    assert (finished["status"], finished["reason"], finished["by"]) == ("steered", "steered", "ada")
    new = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != old)
    assert new["steered_from"] == old
    assert new["prompt"].startswith("steered by editing app.py:6") and new["prompt"].endswith("(ada)")
    assert (await client.until(lambda e: e["type"] == "turn.steered"))["steer_ms"] >= 0
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new["turn"])
    assert done["status"] == "completed", done

    # The old generation was stopped; the re-prompt carried the region's diff.
    assert engine.generations[0].end == "stopped"
    reprompt = engine.generations[1].prompt
    assert steered["diff"] in reprompt and "edited what you were writing in app.py" in reprompt
    for peer in (client, watcher):
        await peer.until(lambda e: e["type"] == "turn.finished" and e.get("turn") == new["turn"])
        end = next(i for i, e in enumerate(peer.events) if e["type"] == "turn.finished" and e["turn"] == old)
        late = [e for e in peer.events[end + 1 :]
                if e.get("turn") == old and e["type"] in ("turn.delta", "edit.status")]
        assert late == [], late
        assert "".join(e["text"] for e in peer.of("turn.delta", new["turn"])) == NEW_ANSWER
        text = peer.text("app.py") or ""
        # Their text won; the model's lines before it stay, its unfinished line went.
        assert f"def sub(a, b):\n    result = a - b{MINE}\n" in text, text
        assert "return result" not in text
    kept = [e for e in client.of("edit.status", old) if e["state"] == "applied"]
    assert kept and kept[-1]["path"] == "app.py"  # the block in flight kept, cut short
    states = [e["state"] for e in watcher.of("edit_steer")]
    assert states[0] == "pending" and states[-1] == "committed", states
    await client.close()
    await watcher.close()


async def test_ctrl_enter_commits_at_once(live: Live, model_server: ModelServer, rooms: None, settings: Any) -> None:
    settings.SPARK_EDIT_STEER_IDLE_MS = 60_000  # only the key commits
    client = await connect(live)
    old = await start_slow_turn(client)
    await edit_written_line(client)
    await client.until(lambda e: e["type"] == "edit_steer" and e["state"] == "pending")
    await client.send({"type": "edit_steer.commit"})
    steered = await client.until(lambda e: e["type"] == "turn.edit_steered")
    assert steered["turn"] == old and steered["why"] == "key"
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != old)
    await client.close()


async def ends_unsteered(client: LiveClient, turn: str) -> None:
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=20)
    assert (done["status"], done["reason"]) == ("completed", "answered"), done
    assert not client.of("turn.edit_steered")


async def test_an_edit_outside_the_region_is_ordinary_typing(
    live: Live, model_server: ModelServer, rooms: None, quick: None,
) -> None:
    client = await connect(live)
    turn = await start_slow_turn(client)
    await client.type_text("app.py", 0, "# a note at the top\n")  # above the block: not its lines
    await client.type_text("util.py", 0, "Y = 2\n")  # another file
    await ends_unsteered(client, turn)
    assert not client.of("edit_steer")
    assert (client.text("app.py") or "").startswith("# a note at the top\n")
    await client.close()


async def test_esc_keeps_the_edit_local(live: Live, model_server: ModelServer, rooms: None, settings: Any) -> None:
    settings.SPARK_EDIT_STEER_IDLE_MS = 300
    client = await connect(live)
    turn = await start_slow_turn(client)
    await edit_written_line(client)
    await client.until(lambda e: e["type"] == "edit_steer" and e["state"] == "pending")
    await client.send({"type": "edit_steer.cancel"})
    await client.until(lambda e: e["type"] == "edit_steer" and e["state"] == "cancelled")
    await edit_written_line(client, "def sub(a, b):\n", " # mine")  # typing on in the region: still ordinary
    await ends_unsteered(client, turn)
    assert f"result = a - b{MINE}" in (client.text("app.py") or "")
    await client.close()


async def test_the_switch_off_does_not_steer(live: Live, model_server: ModelServer, rooms: None, quick: None) -> None:
    client = await connect(live)
    await client.send({"type": "edit_steer.switch", "on": False})
    turn = await start_slow_turn(client)
    await edit_written_line(client)
    await ends_unsteered(client, turn)
    assert not client.of("edit_steer")
    await client.close()


async def test_a_course_with_the_rule_off_does_not_steer(
    live: Live, model_server: ModelServer, rooms: None, quick: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def ai_policy(self: DatabaseRoomStore) -> AiPolicy:
        return AiPolicy(edit_steer=False)

    monkeypatch.setattr(DatabaseRoomStore, "ai_policy", ai_policy)
    client = await connect(live)
    turn = await start_slow_turn(client)
    await edit_written_line(client)
    await ends_unsteered(client, turn)
    assert not client.of("edit_steer")
    policy = client.of("policy")
    assert policy and policy[-1]["edit_steer"] is False
    await client.close()


async def test_the_switch_message_is_checked(live: Live, model_server: ModelServer, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "edit_steer.switch"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "missing_field" and "'on'" in error["message"]
    await client.send({"type": "edit_steer.commit", "why": "later"})
    error = await client.until(lambda e: e["type"] == "error" and e is not error)
    assert error["code"] == "bad_field"
    await client.close()


V4A_SLOW = "@@\n-X = 1\n" + "".join(f"+Y{i} = {i}\n" for i in range(150))


@pytest.fixture
async def patch_server(monkeypatch: pytest.MonkeyPatch, settings: Any) -> AsyncIterator[RecordingServer]:
    """Our model server playing an ``apply_patch`` call (the V4A dialect) whose one hunk streams
    slowly; every request it got is in its log."""
    settings.SPARK_EDIT_STYLE = "apply-patch"
    settings.SPARK_EDIT_STEER_IDLE_MS = 40
    call = {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_a",
            "input": f"*** Begin Patch\n*** Update File: util.py\n{V4A_SLOW}*** End Patch\n"}
    engine = RecordingEngine({"slow": [["Changing util.", call]]}, tokens_per_s=300.0, ttft_s=0.005)
    async with RecordingServer(engine, ServerConfig(port=0)) as server:
        point_the_ide_at(server, monkeypatch)
        yield server


async def test_with_a_tool_dialect_the_hunk_in_flight_keeps_the_edit_and_the_steer_goes_on(
    live: Live, patch_server: RecordingServer, rooms: None,
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": "[script:slow]", "path": "util.py"})
    old = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until_true(lambda: "Y1 = 1\n" in (client.text("util.py") or ""))
    await edit_written_line(client, "Y1 = 1\n", "  # [say]On from Y1.[/say]", "util.py")
    steered = await client.until(lambda e: e["type"] == "turn.edit_steered")
    assert steered["turn"] == old and "+Y1 = 1  # [say]On from Y1.[/say]" in steered["diff"]
    new = (await client.until(lambda e: e["type"] == "turn.started" and e.get("steered_from") == old))["turn"]
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new)
    assert done["status"] == "completed", done
    text = client.text("util.py") or ""
    assert text.startswith("Y0 = 0\nY1 = 1  # [say]On from Y1.[/say]\n"), text  # the hunk kept, cut short
    assert "Y149" not in text
    refused = [entry.error for entry in patch_server.request_log.entries if entry.error is not None]
    assert refused == [], f"the model server refused a request (an unanswered call?): {refused}"
    assert "".join(e["text"] for e in client.of("turn.delta", new)) == "On from Y1."
    await client.close()


# A new function: the preview shows it as it streams (one replacing a definition is held back).
FENCE = "Here it is.\n```python\ndef mul(a, b):\n    result = a * b\n" + FILLER + "    return result\n```\n"
WRITTEN_MUL = "    result = a * b\n"


async def test_the_small_model_keeps_the_edit_and_gets_its_plain_request_again(
    live: Live, model_server: ModelServer, rooms: None, quick: None, settings: Any,
) -> None:
    settings.SPARK_EDIT_STYLE = "whole-file"  # as for the bundled SmolLM2: a fence is the open file
    engine = recording_engine(model_server)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FENCE, rate=250), "path": "app.py"})
    old = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until_true(lambda: WRITTEN_MUL in (client.text("app.py") or ""))  # the fence's preview
    await edit_written_line(client, WRITTEN_MUL, "  # mine")
    steered = await client.until(lambda e: e["type"] == "turn.edit_steered")
    assert steered["turn"] == old and "+    result = a * b  # mine" in steered["diff"]
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == old)
    assert finished["status"] == "steered"
    assert [e["state"] for e in client.of("edit.status", old)][-1] == "applied"  # the preview kept, theirs in it
    assert "result = a * b  # mine\n" in (client.text("app.py") or "")
    new = (await client.until(lambda e: e["type"] == "turn.started" and e.get("steered_from") == old))["turn"]
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new)
    reprompt = engine.generations[1].prompt
    assert "edited what you were writing" not in reprompt and "You were interrupted" not in reprompt
    assert reprompt.rstrip().endswith(say(FENCE, rate=250).rstrip()) or say(FENCE, rate=250) in reprompt
    await client.close()


async def test_two_people_editing_the_region_make_one_steer_with_both_edits(
    live: Live, model_server: ModelServer, rooms: None, settings: Any, django_user_model: Any,
) -> None:
    settings.SPARK_EDIT_STEER_IDLE_MS = 400  # room for the second person's edit
    cole = await database_sync_to_async(django_user_model.objects.create_user)(username="cole", password="pw-c-123")
    await database_sync_to_async(Participant.objects.create)(
        session_id=live.session_id, user=cole, role=Role.COLLABORATOR,
    )
    ada, other = await connect(live), await connect(live, token=await token_for(cole))
    old = await start_slow_turn(ada)
    await edit_written_line(ada)
    await other.until(lambda e: e["type"] == "edit_steer" and e["state"] == "pending")
    await other.until_true(lambda: MINE in (other.text("app.py") or ""))
    await edit_written_line(other, "def sub(a, b):\n", "  # cole's")  # the line above, in the same region
    steered = await ada.until(lambda e: e["type"] == "turn.edit_steered")
    assert steered["turn"] == old and steered["by"] == "ada, cole"
    assert "+def sub(a, b):  # cole's\n" in steered["diff"] and f"+    result = a - b{MINE}\n" in steered["diff"]
    assert len(ada.of("turn.edit_steered")) == 1
    await ada.until(lambda e: e["type"] == "turn.finished" and e.get("turn") != old)
    await ada.close()
    await other.close()
