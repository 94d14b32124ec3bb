"""Keep or undo each hunk, live (issue 31), as two people see it: a turn's patch of three
hunks streams; the viewer sees the Keep / Undo controls disabled; the driver undoes hunk 2
while hunk 3 is still being written; the file ends with hunks 1 and 3, on both pages, in the
server's document and in the stored files; the model's next request (the turn's round 2)
says hunk 2 was undone; Alt+Shift+Y keeps the rest, and both pages say who decided what.

The model is our scripted engine, run in this process with a request log (so the test reads
the requests as the model received them); the IDE offers ``apply_patch``. Nothing is timed.
"""

from __future__ import annotations

import time
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
    second_person,
    server_text,
    wait_for_server_text,
)
from tests.browser.test_live_pairing import _editor_text, _exported

pytestmark = pytest.mark.browser

APP = "".join(f"line {n}\n" for n in range(1, 17))
LONG = "line 14 " + " ".join(f"word{n}" for n in range(60))  # hunk 3's line: it streams for a while
PATCH = (
    "*** Begin Patch\n*** Update File: app.py\n"
    "@@\n line 2\n-line 3\n+line 3 one\n line 4\n"
    "@@\n line 7\n-line 8\n+line 8 two\n line 9\n"
    f"@@\n line 13\n-line 14\n+{LONG}\n line 15\n"
    "*** End Patch\n"
)
SCRIPTS = {"review": [["Three changes.\n", {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH}],
                      "Done.\n"]}
RATE = 20  # tokens/s: hunk 3's line takes about four seconds
EXPECTED = APP.replace("line 3\n", "line 3 one\n").replace("line 14\n", f"{LONG}\n")

# The moment to press Undo: hunk 2 applied (its Undo enabled), hunk 3 still being written.
HUNK_3_STREAMING = """() => {
    const undo = document.querySelector('.hunk-review[data-block="1"] .hunk-undo');
    const chip = [...document.querySelectorAll(".turn .chip")].find(
        (c) => c.querySelector(".chip-path").textContent === "app.py · hunk 3");
    return Boolean(undo && !undo.disabled && chip && ["locating", "streaming"].includes(chip.dataset.state));
}"""


@pytest.fixture(scope="module")
def review_server(
    ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[IdeServer, RequestLog]]:
    """An IDE whose model edits through apply_patch; the model server runs here, its requests logged."""
    data = tmp_path_factory.mktemp("ide-review")
    with logged_model_ide(ide_server, data, SCRIPTS, SPARK_EDIT_STYLE="apply-patch") as ide:
        yield ide


def _reviews(person: Any) -> list[tuple[str, str, str]]:
    """Each block's review row on the page: (block, state, note)."""
    rows = person.locator(".hunk-review:not([hidden])").evaluate_all(
        """(rows) => rows.map((row) => [
            row.dataset.block, row.dataset.review, row.querySelector('.hunk-note').textContent])"""
    )
    return [tuple(row) for row in rows]


def _gutter(person: Any) -> list[list[Any]]:
    """Each gutter mark as [block, its line, its buttons disabled]."""
    return list(person.evaluate("""() => [...document.querySelectorAll(".cm-hunk-mark")].map((mark) => {
        const gutters = [...mark.closest(".cm-gutter").querySelectorAll(".cm-gutterElement")];
        const lines = [...document.querySelectorAll(".cm-lineNumbers .cm-gutterElement")];
        const row = mark.closest(".cm-gutterElement").getBoundingClientRect().top;
        const number = lines.find((line) => Math.abs(line.getBoundingClientRect().top - row) < 2);
        return [mark.dataset.block, number ? number.textContent : null,
            [...mark.querySelectorAll("button")].every((button) => button.disabled)];
    })"""))


def test_the_driver_undoes_hunk_2_while_hunk_3_streams_and_the_viewer_sees_it(
    review_server: tuple[IdeServer, RequestLog], page: Any, chromium: Any,
) -> None:
    server, log = review_server
    open_new_workspace(server, page, "hunk review")
    create_file(page, "app.py")
    page.locator(".cm-content").click()
    page.keyboard.insert_text(APP)
    wait_for_server_text(page, "app.py", APP)
    with second_person(server, page, chromium, role="viewer", username="vic") as viewer:
        viewer.locator(".tab", has_text="app.py").click()
        box = page.get_by_label("Prompt")
        box.fill(f"[rate:{RATE}][script:review]")
        box.press("Enter")

        page.wait_for_function(HUNK_3_STREAMING, timeout=LIVE_WAIT_MS, polling=20)
        # The viewer sees the same controls, disabled.
        viewer_undo = viewer.locator('.hunk-review[data-block="1"] .hunk-undo')
        viewer_undo.wait_for(timeout=LIVE_WAIT_MS)
        assert viewer_undo.is_disabled() and viewer.locator('.hunk-review[data-block="0"] .hunk-keep').is_disabled()

        page.locator('.hunk-review[data-block="1"] .hunk-undo').click()
        for person in (page, viewer):
            person.locator('.hunk-review[data-block="1"][data-review="undone"]').wait_for(timeout=LIVE_WAIT_MS)
        # Undone while hunk 3 was still being written.
        hunk_3 = page.locator(".turn .chip", has_text="app.py · hunk 3")
        assert hunk_3.get_attribute("data-state") in ("locating", "streaming"), hunk_3.get_attribute("data-state")

        for person in (page, viewer):
            person.locator("#transcript .turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
        assert server_text(page, "app.py") == EXPECTED
        for person in (page, viewer):
            person.wait_for_function(
                "(long) => [...document.querySelectorAll('.cm-line')].some((line) => line.textContent.includes(long))",
                arg=LONG, timeout=LIVE_WAIT_MS,
            )
            assert _editor_text(person) == EXPECTED, person
        deadline = time.monotonic() + LIVE_WAIT_MS / 1000
        while (stored := _exported(page, "app.py")) != EXPECTED:
            assert time.monotonic() < deadline, f"the stored file is {stored!r}"
            page.wait_for_timeout(200)

        # The model's next request, round 2 of the turn, says hunk 2 was undone.
        [second] = [entry for entry in log.answered() if entry.tool_outputs()]
        [output] = second.tool_outputs()
        assert "local undid hunk 2 of app.py in turn" in output["output"], output
        assert "Do not apply it again" in output["output"]

        # The editor's gutter marks the blocks still waiting on their first line (hunk 1 from
        # its context line 2, hunk 3 from line 13), disabled for the viewer.
        for person in (page, viewer):
            person.wait_for_function(
                "() => document.querySelectorAll('.cm-hunk-mark').length === 2", timeout=LIVE_WAIT_MS,
            )
            assert _gutter(person) == [["0", "2", person is viewer], ["2", "13", person is viewer]]
        # The gutter's Keep keeps hunk 1; Alt+Shift+Y keeps the rest of the turn's; both pages
        # say who decided what.
        page.locator('.cm-hunk-mark[data-block="0"] .cm-hunk-keep').click()
        page.locator('.hunk-review[data-block="0"][data-review="kept"]').wait_for(timeout=LIVE_WAIT_MS)
        assert page.locator(".hunk-review-all:not([hidden]) .hunk-count").inner_text() == "1 change to review"
        assert viewer.locator(".hunk-review-all .hunk-keep-all").is_disabled()
        page.keyboard.press("Alt+Shift+KeyY")
        expected = [("0", "kept", "kept by local"), ("1", "undone", "undone by local"), ("2", "kept", "kept by local")]
        for person in (page, viewer):
            person.wait_for_function(
                "() => document.querySelectorAll('.hunk-review[data-review=\"kept\"]').length === 2",
                timeout=LIVE_WAIT_MS,
            )
            assert _reviews(person) == expected
            assert person.locator(".hunk-review-all").is_hidden()
            person.wait_for_function("() => !document.querySelector('.cm-hunk-mark')", timeout=LIVE_WAIT_MS)
        assert server_text(page, "app.py") == EXPECTED
