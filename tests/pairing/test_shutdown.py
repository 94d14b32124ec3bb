"""A Daphne process told to stop (SIGTERM, as a service manager does) closes its rooms before
it exits: the turn that was running ends as ``shutdown`` in the stored event log, with what
the model had written so far, instead of being left running for the next opening to find.

One Daphne on SQLite with the scripted model (the embedded default's stack).
"""

from __future__ import annotations

import asyncio
import json
import signal

import pytest

from benchmarks.pairing.stack import Stack
from tests.support.peer import Peer, say

pytestmark = pytest.mark.processes

_FINISHED = """
import json
from spark_ide.pairing.models import RoomEvent
rows = RoomEvent.objects.filter(workspace_id="{workspace}", kind="turn.finished").values_list("data", flat=True)
print("FINISHED", json.dumps(list(rows)))
"""


async def test_a_stopped_server_closes_its_rooms_first() -> None:
    async with Stack({}, relay=False) as stack:
        workspace_id, ws_url = await stack.session({"app.py": "X = 1\n"})
        driver = Peer("driver", stack.token)
        await driver.open(ws_url)
        await driver.send({"type": "prompt", "text": say(" ".join(f"w{i}" for i in range(3000)), rate=200)})
        await driver.until(lambda e: e["type"] == "turn.delta")
        daphne = stack.daphne_processes[0]
        daphne.send_signal(signal.SIGTERM)
        await asyncio.to_thread(daphne.wait, 15)
        await driver.close()
        out = await stack.manage("shell", "-c", _FINISHED.format(workspace=workspace_id))
        finished = json.loads(out.split("FINISHED", 1)[1])
        assert [(row["status"], row["reason"]) for row in finished] == [("cancelled", "shutdown")]
