from __future__ import annotations

import pytest

from tests.pairing.conftest import Live, connect, say

# The services pass runs it again: a turn end to end, stored, on the Redis lease and layer.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

EDIT_APP = """I will rename add.
<edit path="app.py">
<old_text line="1">
def add(a, b):
    return a + b
</old_text>
<new_text>
def plus(a, b):
    return a + b
</new_text>
</edit>
"""

WRITE_NEW = """And a new file.
<write path="lib/new.py">
VALUE = 42
</write>
"""


async def test_a_prompt_streams_edits_into_two_files(live: Live, model_server: object, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(EDIT_APP + WRITE_NEW), "path": "app.py"})
    started = await client.until(lambda e: e["type"] == "turn.started")
    turn = started["turn"]
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "completed", finished
    await client.pump(0.3)
    deltas = "".join(e["text"] for e in client.of("turn.delta", turn))
    assert deltas == EDIT_APP + WRITE_NEW
    final = {(e["block"], e["path"]): e["state"] for e in client.of("edit.status", turn)}
    assert final == {(0, "app.py"): "applied", (1, "lib/new.py"): "applied"}
    assert client.text("app.py") == "def plus(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    assert client.text("lib/new.py") == "VALUE = 42\n"
    metrics = finished["metrics"]
    assert metrics["tokens"] > 0 and metrics["ttft_ms"] is not None and metrics["duration_ms"] > 0
    seqs = [e["seq"] for e in client.events]
    assert seqs == sorted(seqs)
    await client.close()
