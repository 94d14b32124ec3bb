"""Steering by editing in Chromium (issue 33), as two people see it: the model streams a long
edit block into app.py; the owner clicks the line it has just written and changes it; the page
marks the lines and says a steering edit is pending; the owner pauses; both pages show the
transcript line "steered by editing app.py:6 (local)" and the new answer streaming, and the
owner's text is in the file. The second person (a viewer) only watches. Then Esc in the lines
of the next turn keeps an edit local: that turn goes on until it is stopped.

The model is our scripted engine (the session's ``ide_server``). The person's change carries a
``[say]`` directive: the re-prompt's diff of the region picks the new answer. Nothing is timed.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_ide.live.events import edit_steered_label
from tests.browser.conftest import (
    LIVE_WAIT_MS,
    ROOT,
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    wait_for_server_text,
)
from tests.browser.test_live_pairing import _ask
from tests.support.node import run_node

pytestmark = pytest.mark.browser

APP = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
FILLER = "".join(f"    # step {i} of the long way\n" for i in range(80))
SLOW_EDIT = (
    "Rewriting sub.\n"
    '<edit path="app.py">\n<old_text>\ndef sub(a, b):\n    return a - b\n</old_text>\n<new_text>\n'
    "def sub(a, b):\n    result = a - b\n" + FILLER + "    return result\n</new_text>\n</edit>\n"
)
MINE = "  # [say]Kept your edit.[/say]"


def test_a_person_fixes_the_line_being_written_and_the_model_follows(
    ide_server: IdeServer, page: Any, chromium: Any,
) -> None:
    open_new_workspace(ide_server, page, "edit steer")
    create_file(page, "app.py")
    page.locator(".cm-content").click()
    page.keyboard.insert_text(APP)
    wait_for_server_text(page, "app.py", APP)
    assert page.locator("#edit-steer input[type=checkbox]").is_checked()  # on by default for a driver
    with second_person(ide_server, page, chromium, role="viewer", username="vic") as viewer:
        assert viewer.locator("#edit-steer").count() == 0  # a viewer cannot edit: no switch
        _ask(page, f"[rate:60][say]{SLOW_EDIT}[/say]")
        written = page.locator(".cm-line", has_text="result = a - b")
        written.wait_for(timeout=LIVE_WAIT_MS)
        written.click()
        page.keyboard.press("End")
        page.keyboard.insert_text(MINE)
        # While the person types there, the lines are marked and the hint says what happens.
        page.locator("[data-edit-steer=hint]", has_text="pause to steer").wait_for(timeout=LIVE_WAIT_MS)
        page.locator(".cm-line.cm-edit-steer", has_text="Kept your edit").wait_for(timeout=LIVE_WAIT_MS)
        # The person pauses: the model is steered; everyone sees the line and the new answer.
        for person in (page, viewer):
            line = person.locator(".edit-steered summary", has_text="steered by editing app.py:6")
            line.wait_for(timeout=LIVE_WAIT_MS)
            assert "(local)" in line.inner_text()
            assert "Kept your edit" in person.locator(".edit-steered-diff").first.text_content()
            person.locator(".turn", has_text="Kept your edit.").last.wait_for(timeout=LIVE_WAIT_MS)
            person.locator(".cm-content", has_text=f"result = a - b{MINE}").wait_for(timeout=LIVE_WAIT_MS)
        page.locator("[data-edit-steer=hint]").wait_for(state="hidden", timeout=LIVE_WAIT_MS)
        assert page.locator(".cm-edit-steer").count() == 0
        assert "return result" not in page.locator(".cm-content").inner_text()  # the model's rest never came
        assert page.locator("[data-field=steer]").inner_text() != ""  # the status bar's steer latency

        # Esc in the region keeps the next edit local: the turn goes on, unsteered, until stopped.
        # Long enough (about 30 s at 60 tokens/s) to be still running when it is stopped, however
        # slowly the page and the steps before get there.
        lines = "".join(f"line_{i} = {i}\n" for i in range(400))
        _ask(page, f'[rate:60][say]Another.\n<write path="b.py">\n{lines}</write>\n[/say]')
        written = page.locator(".cm-line", has_text="line_1 = 1")
        written.wait_for(timeout=LIVE_WAIT_MS)
        written.click()
        page.keyboard.press("End")
        page.keyboard.insert_text("  # mine, not a steer")
        page.locator("[data-edit-steer=hint]", has_text="Esc keeps it local").wait_for(timeout=LIVE_WAIT_MS)
        page.keyboard.press("Escape")
        page.locator("[data-edit-steer=hint]").wait_for(state="hidden", timeout=LIVE_WAIT_MS)
        page.locator(".cm-line", has_text="line_9 = 9").wait_for(timeout=LIVE_WAIT_MS)  # the model writes on
        page.locator("button[data-action=stop]").click()
        page.locator(".turn .badge.outcome", has_text="cancelled").wait_for(timeout=LIVE_WAIT_MS)
        assert page.locator(".edit-steered").count() == 1
        # (a stop rolls back the block in flight: the person's typing in it stays)
        assert "# mine, not a steer" in page.locator(".cm-content").inner_text()


REFUSED_STORAGE_JS = """
const { EditSteerControl } = await import(MODULE);
globalThis.window = {};
Object.defineProperty(globalThis.window, "localStorage", {
  get() { throw new Error("SecurityError: storage is refused"); },
});
const sent = [];
const control = new EditSteerControl(null, { send: (message) => sent.push(message), tabs: {} });
control.connected("ada");
console.log(JSON.stringify({ wanted: control.wanted(), sent }));
"""


def test_a_browser_that_refuses_storage_still_gets_the_page() -> None:
    # Reading window.localStorage throws where the browser's settings block storage: the
    # control (built with the live page) goes on with the switch on, as the server starts it.
    module = (ROOT / "static/src/live/edit_steer.js").as_uri()
    assert run_node(REFUSED_STORAGE_JS, MODULE=module) == {"wanted": True, "sent": []}


INLINE_BOX_KEYS_JS = """
const { EditSteerControl } = await import(MODULE);
const sent = [];
const control = new EditSteerControl(null, { send: (message) => sent.push(message), tabs: {}, storage: null });
control.connected("ada");
control.state({ type: "edit_steer", state: "pending", turn: "t1", path: "a.py", lines: [3, 4], by: ["ada"] });
const key = (key, inBox) => {
  const target = { closest: (selector) => (inBox && selector === ".inline-prompt" ? {} : null) };
  return control.key({ key, ctrlKey: key === "Enter", target, preventDefault() {}, stopPropagation() {} });
};
const taken = [key("Escape", true), key("Enter", true), key("Escape", false)];
console.log(JSON.stringify({ taken, sent: sent.map((message) => message.type) }));
"""


def test_keys_typed_in_the_ctrl_k_box_are_not_the_pending_steering_edit_s() -> None:
    # Esc in the inline prompt box over the editor closes the box; it does not also keep a
    # pending steering edit local (nor Ctrl+Enter commit it). In the editor itself it does.
    module = (ROOT / "static/src/live/edit_steer.js").as_uri()
    assert run_node(INLINE_BOX_KEYS_JS, MODULE=module) == {
        "taken": [False, False, True], "sent": ["edit_steer.cancel"],
    }


def test_the_steered_line_names_its_lines_as_the_server_s_label_does() -> None:
    # One wording: the transcript's line (edit_steer.js) and the steer's prompt, the replay's
    # mark (events.edit_steered_label).
    script = """
const { steeredLine } = await import(MODULE);
console.log(JSON.stringify(CASES.map(([path, lines, by]) => steeredLine({ path, lines, by }))));
"""
    cases: list[tuple[str, list[int], str]] = [("a.py", [6, 6], "Ana"), ("src/b.py", [12, 14], "Ana, Bo")]
    module = (ROOT / "static/src/live/edit_steer.js").as_uri()
    expected = [edit_steered_label(path, lines, by) for path, lines, by in cases]
    assert run_node(script, MODULE=module, CASES=cases) == expected
