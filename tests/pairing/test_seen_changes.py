"""The model knows what people changed (issue 31, item 3) through the real stack: the session
socket, the room's Pilot and our model server with the scripted engine, which keeps each
request it was sent. A person's keystrokes between two turns come back in the second request
as a diff of that file; the file nobody touched gets none."""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.live.seen import HEADING
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import ROOMS
from tests.pairing.conftest import Live, connect, say
from tests.support.recording_engine import recording_engine

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_person_s_edit_between_turns_reaches_the_next_request_as_a_diff(
    live: Live, model_server: ModelServer, rooms: None
) -> None:
    engine = recording_engine(model_server)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("Nothing to change.\n")})
    first = await client.until(lambda e: e["type"] == "turn.finished")

    await client.type_text("util.py", 0, "# set by ada\n")  # a keystroke's update, as a page sends it
    room = ROOMS.owned(live.workspace_id)
    assert room is not None

    def arrived() -> bool:
        return room.texts()["util.py"].startswith("# set by ada\n")

    await client.until_true(arrived)
    await client.send({"type": "prompt", "text": say("Still nothing.\n")})
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != first["turn"])

    prompts: list[Any] = [generation.prompt for generation in engine.generations]
    assert len(prompts) == 2 and HEADING not in prompts[0]
    changes = prompts[1][prompts[1].index(HEADING) : prompts[1].index("Request:")]
    assert "Since you last saw util.py, the user changed it:" in changes
    assert '<diff path="util.py">\n@@ -1 +1,2 @@\n+# set by ada\n X = 1\n</diff>' in changes
    assert "app.py" not in changes  # nobody changed it
    await client.close()
