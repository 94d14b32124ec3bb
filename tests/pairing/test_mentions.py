"""Mentions and the context over the session socket (issue 32): a ``context.preview`` and a
``symbols`` are answered to the asking page only; a prompt's mentions reach the model first
and its ``turn.context`` is stored, so a page that comes later is told it; bad mentions get a
clear error and start nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pairing.conftest import FILES, Live, connect, refused, say

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_preview_is_the_askers_and_the_turns_context_is_kept(
    live: Live, model_server: Any, rooms: None,
) -> None:
    asker, other = await connect(live), await connect(live)
    await asker.send({"type": "context.preview", "text": "x", "path": "app.py", "mentions": ["app.py:sub", "no.py"]})
    preview = await asker.until(lambda e: e["type"] == "context")
    context = preview["context"]
    assert context["symbols"] == [] and context["whole"] == list(FILES)  # app.py: the open file, whole
    assert context["missing"] == [{"mention": "no.py", "why": "no such file"}]
    await asker.send({"type": "symbols", "path": "app.py"})
    listed = await asker.until(lambda e: e["type"] == "symbols")
    assert [symbol["name"] for symbol in listed["symbols"]] == ["add", "sub"] and listed["exists"] is True
    await other.send({"type": "ping", "id": 1})
    await other.until(lambda e: e["type"] == "pong")
    assert other.of("context") == [] and other.of("symbols") == []  # nobody else is told

    bad = await refused(asker, {"type": "prompt", "text": "go", "mentions": "app.py"})
    assert (bad["code"], bad["message"]) == ("bad_field", "'mentions' must be a list of paths or path:symbol (strings)")

    await asker.send({"type": "prompt", "text": say("ok\n"), "mentions": ["app.py:sub", "no.py"]})
    told = await asker.until(lambda e: e["type"] == "turn.context")
    assert told["context"]["symbols"] == [{"mention": "app.py:sub", "path": "app.py", "first": 5, "last": 6}]
    await asker.until(lambda e: e["type"] == "turn.finished")
    later = await connect(live)  # the transcript after a reload: the stored turn.context
    again = await later.until(lambda e: e["type"] == "turn.context")
    assert again["context"] == told["context"]
