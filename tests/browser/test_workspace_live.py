"""Open a workspace and prompt at once: the model's edit streams in and is there after a reload.

The model is the scripted engine (see test_live_pairing.py): a prompt's ``[say]...[/say]`` is
what it answers, at ``[rate:N]`` tokens/s.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import LIVE_WAIT_MS, IdeServer, open_new_workspace, server_text, wait_for_server_text

pytestmark = pytest.mark.browser

BODY = "".join(f"step_{i} = {i}\n" for i in range(30))
ANSWER = f'[rate:60][say]Writing the steps.\n<write path="steps.py">\n{BODY}</write>\nDone.\n[/say]'


def _editor_states(page: Any, until: str) -> list[str]:
    """The editor's texts, each time it changed, until ``until`` shows (the stream's end)."""
    seen: list[str] = []
    deadline = time.monotonic() + LIVE_WAIT_MS / 1000
    while time.monotonic() < deadline:
        text = page.locator(".cm-content").inner_text() if page.locator(".cm-content").count() else ""
        if "step_" in text and (not seen or text != seen[-1]):
            seen.append(text)
        if until in text:
            return seen
        page.wait_for_timeout(50)
    raise AssertionError(f"the editor never showed {until!r}; saw {len(seen)} states")


def test_open_a_workspace_prompt_at_once_watch_the_edit_stream_in_and_reload(
    ide_server: IdeServer, page: Any
) -> None:
    workspace_url = open_new_workspace(ide_server, page, "prompt at once")
    box = page.get_by_label("Prompt")
    box.fill(ANSWER)
    box.press("Enter")

    page.locator(".tab.active", has_text="steps.py").wait_for(timeout=LIVE_WAIT_MS)  # the tab opens itself
    states = _editor_states(page, "step_29 = 29")
    counts = [state.count("step_") for state in states]
    assert len(counts) >= 3 and counts == sorted(counts) and counts[0] < counts[-1], counts  # line by line
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    wait_for_server_text(page, "steps.py", BODY)

    page.goto(f"{ide_server.url}/")
    page.goto(f"{workspace_url}#steps.py")
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".cm-content", has_text="step_29 = 29").wait_for(timeout=LIVE_WAIT_MS)
    assert server_text(page, "steps.py") == BODY
    page.locator(".tree a[data-open='steps.py']").wait_for()
    page.locator("#history .history-turn").first.wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator("#history .history-turn").count() == 1
