"""A prompt on a selection (issue 32, item 1): in a 200-line file, select three lines, Ctrl+K,
type, Enter. The request the model receives names the lines and carries their text and the
instruction to change only them; the scripted edit lands inside them; every other line of the
file is untouched; the transcript's prompt shows ``big.py:50-52`` (an en dash). Esc closes the box and the
editor takes typing again.

The model is our scripted engine, run in this process with a request log (so the test reads
the request as the model received it), editing through ``apply_patch``. Nothing is timed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_ide.modelserver.request_log import RequestLog
from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    logged_model_ide,
    open_new_workspace,
    wait_for_server_text,
)
from tests.browser.test_live_pairing import _document, _wait_document

pytestmark = pytest.mark.browser

BIG = "".join(f"x_{n} = {n}\n" for n in range(1, 201))
PATCH = (
    "*** Begin Patch\n*** Update File: big.py\n@@\n x_50 = 50\n-x_51 = 51\n+x_51 = \"fifty-one\"\n x_52 = 52\n"
    "*** End Patch\n"
)
SCRIPTS = {"inline": [["Making it a string.\n", {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH}],
                      "Done.\n"]}
EXPECTED = BIG.replace("x_51 = 51\n", 'x_51 = "fifty-one"\n')


@pytest.fixture(scope="module")
def inline_server(
    ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[IdeServer, RequestLog]]:
    data = tmp_path_factory.mktemp("ide-inline")
    with logged_model_ide(ide_server, data, SCRIPTS, SPARK_EDIT_STYLE="apply-patch") as ide:
        yield ide


def _asked(log: RequestLog, since: int) -> str:
    """The user message of the first request since entry ``since`` that asks something (a
    warm-up carries none), as the model received it."""
    for entry in log.entries[since:]:
        for item in entry.items:
            content = item.get("content") if item.get("role") == "user" else None
            text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content or ())
            if "Request:" in text:
                return text
    raise AssertionError("no request asked anything")


def test_select_three_lines_ctrl_k_ask_and_the_edit_stays_inside_them(
    inline_server: tuple[IdeServer, RequestLog], page: Any,
) -> None:
    server, log = inline_server
    before = len(log.entries)
    open_new_workspace(server, page, "inline prompt")
    create_file(page, "big.py")
    page.locator(".cm-content").click()
    page.keyboard.insert_text(BIG)
    wait_for_server_text(page, "big.py", BIG)

    # Esc closes the box; the editor's keys and typing go on as before. On the first line, in
    # a small window, the box opens below it, inside the editor (not over the tabs or header).
    page.set_viewport_size({"width": 1024, "height": 700})
    page.keyboard.press("Control+Home")
    page.keyboard.press("Control+k")
    box = page.get_by_label("Ask about these lines")
    box.wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator(".inline-prompt-where").inner_text() == "Line 1 (its block)"
    idle_keys = "Enter: ask \u00b7 Alt+Enter: queue \u00b7 Esc: close"  # no turn runs: Enter asks
    assert page.locator(".inline-prompt-keys").inner_text() == idle_keys
    placed, editor = page.locator(".inline-prompt").bounding_box(), page.locator(".cm-editor").bounding_box()
    assert placed and editor
    assert editor["y"] <= placed["y"] and placed["y"] + placed["height"] <= editor["y"] + editor["height"], placed
    assert editor["x"] <= placed["x"] and placed["x"] + placed["width"] <= editor["x"] + editor["width"], placed
    page.set_viewport_size({"width": 1280, "height": 800})
    box.press_sequentially("ab")  # keys typed in the box stay in it (the file is checked below)
    for key in ("Backspace", "ArrowLeft", "Home"):
        box.press(key)
    assert box.input_value() == "a"
    box.press("Escape")
    box.wait_for(state="detached", timeout=LIVE_WAIT_MS)
    page.keyboard.type("# top\n")
    wait_for_server_text(page, "big.py", "# top\n" + BIG)
    for _ in range(6):
        page.keyboard.press("Backspace")
    wait_for_server_text(page, "big.py", BIG)

    # Lines 50 to 52: from the start of line 50 to the start of line 53.
    page.keyboard.press("Control+Home")
    for _ in range(49):
        page.keyboard.press("ArrowDown")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Control+k")
    box.wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator(".inline-prompt-where").inner_text() == "Lines 50\u201352"
    assert page.locator(".cm-line.cm-inline-range").count() == 3
    # The box sits over the selection's first line, inside the editor.
    placed, line, editor = (
        page.locator(selector).bounding_box()
        for selector in (".inline-prompt", ".cm-line:has-text('x_50 = 50')", "#editor")
    )
    assert placed and line and editor
    assert abs(placed["y"] + placed["height"] - line["y"]) < 12, (placed, line)
    assert editor["x"] <= placed["x"] and placed["x"] + placed["width"] <= editor["x"] + editor["width"]

    box.fill("[script:inline] make x_51 a string")
    box.press("Enter")
    box.wait_for(state="detached", timeout=LIVE_WAIT_MS)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)

    asked = _asked(log, before)  # the turn's first request
    assert (
        "The request is about lines 50-52 of big.py:\n"
        '<file path="big.py" lines="50-52">\nx_50 = 50\nx_51 = 51\nx_52 = 52\n</file>\n'
        "Change only these lines unless the request needs more.\n"
    ) in asked
    assert asked.rstrip().endswith("Request: [script:inline] make x_51 a string")
    _wait_document(page, "big.py", lambda text: text == EXPECTED)  # inside the range; the rest untouched
    assert _document(page, "big.py").splitlines()[:49] == BIG.splitlines()[:49]
    range_badge = page.locator(".turn .turn-range")
    assert range_badge.inner_text() == "big.py:50\u201352"

    # The strip under the prompt box names the selection as the Ctrl+K box does: from the start
    # of line 50 to the start of line 53 is lines 50-52.
    page.locator(".cm-content").click()
    page.keyboard.press("Control+Home")
    for _ in range(49):
        page.keyboard.press("ArrowDown")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowDown")
    page.get_by_label("Prompt").focus()
    page.locator("#context-strip .context-chip.active", has_text="big.py \u00b7 lines 50\u201352 selected").wait_for(
        timeout=LIVE_WAIT_MS
    )
