"""Checkpoints in the history panel (issue 31, part 2), as a person uses them: the checkpoint
taken before a turn is listed with the turn's prompt; its Code restores the files and the
editor changes; the restore is undone by the checkpoint taken just before it; a named
checkpoint is saved from the panel, its name kept as typed when the panel is drawn again
meanwhile."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import (
    ARTIFACTS,
    IdeServer,
    create_file,
    open_new_workspace,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

SEED = "seed = 1\n"
WRITE = '[rate:400][say]Rewriting a.py.\n<write path="a.py">\nprint("model")\n</write>\n[/say]'
WAIT_MS = 20_000


def wait_document(page: Any, path: str, text: str) -> None:
    deadline = time.monotonic() + WAIT_MS / 1000
    while (now := server_text(page, path)) != text:
        assert time.monotonic() < deadline, f"{path} holds {now!r}, not {text!r}"
        page.wait_for_timeout(50)


def redraw_history(page: Any) -> None:
    """The history panel drawn again, as after any turn: returns once the new copy is in."""
    page.evaluate("""() => {
        document.querySelector("[data-checkpoint-create]").dataset.before = "1";
        document.body.dispatchEvent(new CustomEvent("spark:history-changed"));
    }""")
    page.locator("[data-checkpoint-create]:not([data-before])").wait_for(timeout=WAIT_MS)


def test_restore_code_from_the_history_panel_and_undo_it(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "checkpoints")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type(SEED)
    wait_for_server_text(page, "a.py", SEED)

    box = page.get_by_label("Prompt")
    box.fill(WRITE)
    box.press("Enter")
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
    editor = page.locator(".cm-content")
    editor.filter(has_text='print("model")').wait_for(timeout=WAIT_MS)

    panel = page.locator("#history .history-checkpoints")
    entry = panel.locator(".checkpoint.kind-turn").first
    entry.wait_for(timeout=WAIT_MS)
    assert "Rewriting a.py." in entry.locator(".checkpoint-what").inner_text()
    entry.get_by_role("button", name="Restore the code", exact=True).click()

    page.locator("#toasts", has_text="restored the code").wait_for(timeout=WAIT_MS)  # before it fades
    editor.filter(has_text="seed = 1").wait_for(timeout=WAIT_MS)  # the editor changed
    assert 'print("model")' not in editor.inner_text()
    wait_document(page, "a.py", SEED)
    undo = panel.locator(".checkpoint.kind-restore").first
    undo.wait_for(timeout=WAIT_MS)
    assert "before restoring" in undo.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "checkpoints_restored.png"))

    undo.get_by_role("button", name="Restore the code", exact=True).click()  # the restore undone
    editor.filter(has_text='print("model")').wait_for(timeout=WAIT_MS)
    wait_document(page, "a.py", 'print("model")\n')

    # A name half typed when the panel is drawn again (anyone's turn or restore redraws it)
    # is still there, with the caret in it: the rest of it is typed on.
    name = panel.get_by_label("Checkpoint name")
    name.click()
    page.keyboard.type("before")
    redraw_history(page)
    assert name.input_value() == "before"
    assert name.evaluate("(input) => document.activeElement === input")
    page.keyboard.type(" refactor")
    page.keyboard.press("Enter")
    panel.locator(".checkpoint.kind-named", has_text="before refactor").wait_for(timeout=WAIT_MS)
