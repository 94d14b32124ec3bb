"""A steered turn of a small model (prompts for whole files) that re-writes the file's function
unchanged: no state of the document a page holds has the function twice, and the turn ends
`no_changes` (issue 27, item 9; the browser test samples the editor the same way)."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Map

from tests.pairing.conftest import Live, connect, say

pytestmark = [pytest.mark.django_db(transaction=True)]

IS_PRIME = """\
def is_prime(n):
    if n < 2:
        return False
    for i in range(2, int(n ** 0.5) + 1):
        if n % i == 0:
            return False
    return True
"""
FILE = IS_PRIME + "\n\nprint(is_prime(7))\n"
# What the bundled model answered after the steer, in shape: prose, then the same function.
AGAIN = f"Sure! Here is the function:\n\n```python\n{IS_PRIME}\nprint(is_prime(7))\n```\n"


async def test_a_steered_fence_that_changes_nothing_never_doubles_the_function(
    live: Live, model_server: object, rooms: None, settings: Any,
) -> None:
    settings.SPARK_EDIT_STYLE = "whole-file"
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(f"```python\n{FILE}```\n"), "path": "main.py"})
    written = (await client.until(lambda e: e["type"] == "turn.finished"))["turn"]
    await client.until_true(lambda: client.text("main.py") == FILE)

    most: list[int] = []  # `def is_prime` in every state of the page's replica from here on
    files = client.doc.get("files", type=Map)
    watching = files.observe_deep(  # kept: dropping it stops the watch
        lambda events: most.append(str(files["main.py"]).count("def is_prime"))
    )
    await client.send({"type": "prompt", "text": say("Let me think about it for a while. " * 20, rate=40),
                       "path": "main.py"})
    first = (await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != written))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta" and e["turn"] == first)
    await client.send({"type": "steer", "text": say(AGAIN, rate=200)})
    steered = await client.until(lambda e: e["type"] == "turn.started" and e.get("steered_from") == first)
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == steered["turn"])
    assert (finished["status"], finished["reason"]) == ("completed", "no_changes")
    final = client.of("edit.status", steered["turn"])[-1]
    assert (final["state"], final["detail"]["merge"]) == ("applied", {"replaced": [], "added": []})
    await client.pump(0.3)
    assert client.text("main.py") == FILE
    assert set(most) <= {1}, most  # no document change at all, or none with a second is_prime
    del watching
    await client.close()
