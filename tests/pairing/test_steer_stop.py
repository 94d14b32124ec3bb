from __future__ import annotations

from typing import Any

import pytest

from spark_ide.modelserver.server import ModelServer
from tests.pairing.conftest import FILES, Live, LiveClient, connect, say
from tests.support.recording_engine import recording_engine

pytestmark = [pytest.mark.django_db(transaction=True)]

FIRST_BLOCK = """<edit path="util.py">
<old_text>
X = 1
</old_text>
<new_text>
X = 2
</new_text>
</edit>
"""
# The second block is long and slow: the test steers while it streams.
SECOND_BLOCK = "<write path=\"app.py\">\n" + "".join(f"line_{i} = {i}\n" for i in range(400)) + "</write>\n"
STEERED = """<write path="steered.py">
steered = True
</write>
"""


def assert_nothing_after_finish(client: LiveClient, turn: str) -> None:
    """PROTOCOL §2 invariant: no delta or status of a turn after its turn.finished."""
    finished_at = next(i for i, e in enumerate(client.events) if e["type"] == "turn.finished" and e["turn"] == turn)
    late = [
        e for e in client.events[finished_at + 1 :]
        if e.get("turn") == turn and e["type"] in {"turn.delta", "edit.status"}
        and not (e["type"] == "edit.status" and e["state"] == "rolled_back")
    ]
    assert late == []


async def _wait_second_block_streaming(client: LiveClient) -> dict[str, Any]:
    return await client.until(lambda e: e["type"] == "edit.status" and e["block"] == 1 and e["state"] == "streaming")


async def test_steer_mid_block_keeps_the_first_block_and_rolls_back_the_second(
    live: Live, model_server: ModelServer, rooms: None
) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    old = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await _wait_second_block_streaming(client)
    await client.send({"type": "steer", "text": say(STEERED)})
    finished_old = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == old)
    assert finished_old["status"] == "steered"
    new = (await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != old))
    assert new["steered_from"] == old
    finished_new = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new["turn"])
    assert finished_new["status"] == "completed", finished_new
    steered = await client.until(lambda e: e["type"] == "turn.steered" and e["turn"] == new["turn"])
    # steer received -> re-prompt sent: measured, and within the turn it started
    assert 0 < finished_new["metrics"]["steer_ms"] == round(steered["steer_ms"], 3)
    assert finished_new["metrics"]["steer_ms"] < finished_new["metrics"]["duration_ms"]
    await client.pump(0.5)
    states = {e["block"]: e["state"] for e in client.of("edit.status", old)}
    assert states == {0: "applied", 1: "rolled_back"}
    assert client.text("util.py") == "X = 2\n"
    assert client.text("app.py") == FILES["app.py"]  # the half-written block is gone
    assert client.text("steered.py") == "steered = True\n"
    assert_nothing_after_finish(client, old)
    assert "".join(e["text"] for e in client.of("turn.delta", new["turn"])) == STEERED
    # Upstream, the old generation was stopped mid-answer; the re-prompt carried the steer.
    first, second = recording_engine(model_server).generations
    assert first.end == "stopped", first
    assert say(STEERED) in second.prompt and second.end == "finished"
    await client.close()


async def test_stop_rolls_back_the_block_in_flight(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await _wait_second_block_streaming(client)
    await client.send({"type": "stop"})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "cancelled"
    await client.pump(0.5)
    assert client.text("util.py") == "X = 2\n"
    assert client.text("app.py") == FILES["app.py"]
    assert_nothing_after_finish(client, turn)
    assert not client.of("turn.started")[1:]  # stop does not re-prompt
    await client.close()


async def test_a_prompt_during_a_turn_is_queued(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK, rate=200)})
    first = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.send({"type": "prompt", "text": say(STEERED)})
    queued = await client.until(lambda e: e["type"] == "turn.queued")
    assert queued["position"] == 1
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == first)
    second = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != first)
    assert second["steered_from"] is None
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == second["turn"])
    assert done["status"] == "completed"
    await client.pump(0.3)
    assert client.text("util.py") == "X = 2\n"
    assert client.text("steered.py") == "steered = True\n"
    await client.close()


async def test_revert_undoes_a_whole_turn(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + STEERED)})
    turn = (await client.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await client.pump(0.2)
    assert client.text("util.py") == "X = 2\n"
    await client.send({"type": "revert", "turn": turn})
    await client.until(lambda e: e["type"] == "edit.status" and e["state"] == "rolled_back")
    await client.until(lambda e: e["type"] == "turn.reverted" and e["turn"] == turn)
    await client.pump(0.3)
    assert client.text("util.py") == "X = 1\n"
    assert client.text("steered.py") in (None, "")
    await client.send({"type": "revert", "turn": "nope"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "revert_unavailable"
    await client.close()


async def test_human_typing_during_a_turn_survives(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.pump(0.2)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    await _wait_second_block_streaming(client)
    await client.type_text("util.py", 0, "# human note\n")
    await client.until(lambda e: e["type"] == "turn.finished", timeout=20)
    await client.pump(0.5)
    assert client.text("util.py") == "# human note\nX = 2\n"
    second = await connect(live)  # a fresh replica sees the same document
    await second.pump(0.5)
    assert second.text("util.py") == "# human note\nX = 2\n"
    assert second.text("app.py") == client.text("app.py")
    await client.close()
    await second.close()


async def test_a_steering_chain_is_one_turn_of_history(live: Live, model_server: object, rooms: None) -> None:
    from spark_ide.pairing.adapter import ROOMS

    client = await connect(live)
    await client.send({"type": "prompt", "text": say(FIRST_BLOCK + SECOND_BLOCK, rate=400)})
    await _wait_second_block_streaming(client)
    await client.send({"type": "steer", "text": say(STEERED)})
    await client.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed")
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    history = room.pilot._maker.history
    assert len(history) == 1  # the steered turn is not history of its own
    assert history[0].prompt == say(FIRST_BLOCK + SECOND_BLOCK, rate=400) + f"\n(Redirected: {say(STEERED)})"
    assert history[0].output == STEERED
    await client.close()


async def test_a_human_and_the_model_editing_the_same_file_both_survive(
    live: Live, model_server: object, rooms: None
) -> None:
    slow_edit = (
        '<edit path="app.py">\n<old_text>\ndef sub(a, b):\n    return a - b\n</old_text>\n<new_text>\n'
        + "".join(f"# step {i}\n" for i in range(150))
        + "def minus(a, b):\n    return a - b\n</new_text>\n</edit>\n"
    )
    client = await connect(live)
    await client.pump(0.2)
    await client.send({"type": "prompt", "text": say(slow_edit, rate=300)})
    await client.until(lambda e: e["type"] == "edit.status" and e["state"] == "streaming")
    await client.type_text("app.py", 0, "import math\n")  # above the region the model rewrites
    finished = await client.until(lambda e: e["type"] == "turn.finished", timeout=30)
    assert finished["status"] == "completed"
    await client.pump(0.5)
    text = client.text("app.py") or ""
    assert text.startswith("import math\ndef add(a, b):\n")
    assert text.endswith("# step 149\ndef minus(a, b):\n    return a - b\n")
    assert "def sub" not in text
    fresh = await connect(live)
    await fresh.pump(0.5)
    assert fresh.text("app.py") == text  # the server's document agrees
    await client.close()
    await fresh.close()
