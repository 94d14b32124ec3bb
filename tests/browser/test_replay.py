"""The replay page in a real browser: a session with a steered turn, played back at 20x,
ends on the document the live editor showed, with the steer marked on the scrubber."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    open_new_workspace,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

SEED = "seed = 1\n"
BODY = "".join(f"value_{i} = {i} * {i}\n" for i in range(60))
SLOW_WRITE = f'[rate:60][say]Writing the table now.\n<write path="a.py">\n{BODY}</write>\nDone.\n[/say]'
STEER = '[rate:400][say]Steered: a shorter file.\n<write path="a.py">\nprint("steered")\nvalue = 2\n</write>\n[/say]'


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def _scrub(page: Any, t: int) -> None:
    """Drag the scrubber to ``t`` ms into the session."""
    page.locator("#replay-scrubber").evaluate(
        "(range, t) => { range.value = String(t); range.dispatchEvent(new Event('input')); }", t
    )


def test_a_replay_at_20x_ends_on_the_live_document_with_the_steer_marked(ide_server: IdeServer, page: Any) -> None:
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    open_new_workspace(ide_server, page, "replayed")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type(SEED)
    wait_for_server_text(page, "a.py", SEED)

    _ask(page, SLOW_WRITE)
    page.locator(".cm-content", has_text="value_8 =").wait_for(timeout=LIVE_WAIT_MS)
    _ask(page, STEER)  # Enter while the model writes: a steer
    page.locator(".turn").nth(1).locator(".badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".cm-content", has_text='print("steered")').wait_for(timeout=LIVE_WAIT_MS)
    live_text = page.locator(".cm-content").inner_text()
    assert server_text(page, "a.py") == 'print("steered")\nvalue = 2\n'

    page.locator("#history a", has_text="Replay this session").click()
    page.wait_for_url("**/replay")
    replay = page.locator("#replay[data-ready=true]")
    replay.wait_for(timeout=LIVE_WAIT_MS)
    steer = page.locator(".replay-mark[data-kind=steer]")
    assert steer.count() == 1
    assert "Steered" in (steer.get_attribute("title") or "")
    assert page.locator(".replay-mark[data-kind=turn]").count() == 1

    # At the turn's start: the document as the person had typed it.
    page.locator(".replay-mark[data-kind=turn]").click()
    page.locator("#replay-editor .cm-content", has_text="seed = 1").wait_for(timeout=LIVE_WAIT_MS)
    assert "value_" not in page.locator("#replay-editor .cm-content").inner_text()

    # Just before the steer: the model's table, half written.
    steer_at = int(steer.get_attribute("data-t") or 0)
    _scrub(page, steer_at - 150)
    page.locator("#replay-editor .cm-content", has_text="value_4 =").wait_for(timeout=LIVE_WAIT_MS)
    assert "steered" not in page.locator("#replay-editor .cm-content").inner_text()

    # Played at 20x from the start: it ends on what the steered turn wrote.
    _scrub(page, 0)
    page.get_by_label("Speed").select_option("20")
    page.get_by_role("button", name="Play").click()
    page.locator("#replay[data-state=ended]").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-files button[data-path='a.py']").click()
    assert page.locator("#replay-editor .cm-content").inner_text() == live_text
    transcript = page.locator("#replay-transcript")
    assert transcript.locator(".turn").count() == 2
    assert transcript.locator(".turn").nth(1).locator(".badge.steer").count() == 1
    assert transcript.locator(".turn").nth(0).locator(".badge.outcome", has_text="steered").count() == 1
    errors = [line for line in console if line.startswith("error")]
    assert errors == [], errors
