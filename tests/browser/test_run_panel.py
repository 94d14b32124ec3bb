"""Code runs on the live page: the owner runs a file with Ctrl+Enter and answers its
``input()`` from the run panel while a viewer watches the same run live; a second run (an
endless loop) is stopped with the Stop button. Also the run panel's output queue under Node
(what the page keeps when output comes faster than frames)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    server_text,
    wait_for_server_text,
)
from tests.support.node import run_node

WAIT_MS = 20_000
# Two pipes have no order between them: the pauses make the order the output arrives in certain.
ECHO = (
    "import sys, time\nprint('ready')\ntime.sleep(0.2)\nprint('careful', file=sys.stderr)\ntime.sleep(0.2)\n"
    "name = input('name? ')\nprint('hello ' + name)\n"
)
LOOP = "while True: pass\n"
OUTPUT_MODULE = (Path(__file__).resolve().parents[2] / "static/src/live/run_output.js").as_uri()


def _output(page: Any, text: str) -> None:
    page.locator("#run-panel .run-output", has_text=text).wait_for(timeout=WAIT_MS)


def _ended(page: Any, status: str) -> Any:
    end = page.locator(f"#run-panel .run-end[data-status='{status}']")
    end.wait_for(timeout=WAIT_MS)
    return end


@pytest.mark.browser
def test_a_run_streams_to_everyone_reads_stdin_and_stops(ide_server: IdeServer, page: Any, chromium: Any) -> None:
    open_new_workspace(ide_server, page, "runs")
    run_button = page.locator("#run-controls [data-run=run]")
    run_button.wait_for(timeout=WAIT_MS)
    assert run_button.is_enabled()
    create_file(page, "echo.py")
    page.locator(".cm-content").click()
    page.keyboard.type(ECHO)
    wait_for_server_text(page, "echo.py", ECHO)

    with second_person(ide_server, page, chromium, role="viewer", username="vera") as viewer:
        viewer_run = viewer.locator("#run-controls [data-run=run]")
        assert viewer_run.is_disabled() and viewer.locator("#run-controls [data-run=tests]").is_disabled()

        # Ctrl+Enter in the editor runs the open file (and inserts no line); both pages see who
        # started it and its output, stderr apart, as it comes.
        page.keyboard.press("Control+Enter")
        for person in (page, viewer):
            person.locator("#run-panel .run-command", has_text="python echo.py").wait_for(timeout=WAIT_MS)
            _output(person, "name? ")
            assert person.locator("#run-panel .run-by").inner_text() == "by local"
            assert person.locator("#run-panel .run-output .err").inner_text() == "careful\n"
        assert page.locator("#run-controls [data-run=stop]").is_visible() and not run_button.is_visible()
        assert viewer.locator("#run-stdin").is_hidden()  # a viewer watches: no input line
        assert viewer.locator("#run-panel [data-run=stop]").is_disabled()

        # The program waits in input(): the line typed in the panel reaches it (shown as typed).
        stdin = page.locator("#run-stdin")
        assert stdin.evaluate("(node) => node === document.activeElement")  # the runner types there
        stdin.fill("Ada")
        stdin.press("Enter")
        for person in (page, viewer):
            _output(person, "hello Ada")
            assert "exit 0" in _ended(person, "ok").inner_text()
        assert page.locator("#run-panel .run-output .in").inner_text() == "Ada\n"
        assert page.locator("#run-panel .run-output").inner_text() == "ready\ncareful\nname? Ada\nhello Ada\n"
        assert viewer.locator("#run-panel .run-output").inner_text() == "ready\ncareful\nname? Ada\nhello Ada\n"
        assert server_text(page, "echo.py") == ECHO  # Ctrl+Enter ran the file, it did not edit it

        # An endless loop, from the Run button; the panel's Stop ends it for everyone.
        create_file(page, "loop.py")
        page.locator(".cm-content").click()
        page.keyboard.type(LOOP)
        wait_for_server_text(page, "loop.py", LOOP)
        run_button.click()
        for person in (page, viewer):
            person.locator("#run-panel .run-command", has_text="python loop.py").wait_for(timeout=WAIT_MS)
            person.locator("#run-panel .run-state", has_text="running").wait_for(timeout=WAIT_MS)
        assert page.locator("#run-panel .run-output").inner_text() == ""  # the last run's output went
        page.locator("#run-panel [data-run=stop]").click()
        for person in (page, viewer):
            assert "no exit code" in _ended(person, "killed").inner_text()
        assert run_button.is_enabled()

        # Both runs are in the history, newest first, with their output. The end of a run is
        # recorded just after it is announced: the panel asks again until it shows it.
        page.locator("#history .history-run.status-killed").wait_for(timeout=WAIT_MS)
        runs = page.locator("#history .history-run")
        assert runs.count() == 2 and "python loop.py" in runs.nth(0).inner_text()
        assert runs.nth(1).get_attribute("class") == "history-run status-ok"
        assert "python echo.py" in runs.nth(1).inner_text()
        runs.nth(1).locator("summary").click()
        assert runs.nth(1).locator("pre").inner_text() == "ready\ncareful\nname? hello Ada\n"


QUEUE_SCRIPT = """
const { OutputQueue } = await import(MODULE);
const queue = new OutputQueue(10);
queue.push("stdout", "abc");
queue.push("stdout", "def");
queue.push("stderr", "E");
queue.push("stdout", "");
queue.push("stdout", "x");
const merged = JSON.parse(JSON.stringify(queue.pieces));
const first = queue.take(4);
const rest = JSON.parse(JSON.stringify(queue.pieces));
queue.push("stdout", "0123456789AB");
const overflow = { pieces: queue.pieces, chars: queue.chars, dropped: queue.dropped };
const pair = new OutputQueue(3);
pair.push("stdout", "a\\u{1F600}b");
const paired = new OutputQueue();
paired.push("stderr", "\\u{1F600}");
console.log(JSON.stringify({
  merged, first, rest, overflow, pair: [pair.pieces[0].text, pair.dropped],
  half: paired.take(1), whole: paired.take(2), empty: paired.empty,
}));
"""


def test_the_output_queue_merges_streams_and_drops_what_the_page_would_not_keep() -> None:
    result: dict[str, Any] = run_node(QUEUE_SCRIPT, MODULE=OUTPUT_MODULE)
    assert result["merged"] == [
        {"stream": "stdout", "text": "abcdef"}, {"stream": "stderr", "text": "E"}, {"stream": "stdout", "text": "x"},
    ]
    assert result["first"] == [{"stream": "stdout", "text": "abcd"}]  # a frame's budget, oldest first
    assert result["rest"] == [
        {"stream": "stdout", "text": "ef"}, {"stream": "stderr", "text": "E"}, {"stream": "stdout", "text": "x"},
    ]
    # Past its limit the queue keeps the newest text only, and counts what it dropped.
    assert result["overflow"] == {"pieces": [{"stream": "stdout", "text": "23456789AB"}], "chars": 10, "dropped": 6}
    assert result["pair"] == ["\U0001f600b", 1]  # never half of a surrogate pair
    assert result["half"] == [] and result["whole"] == [{"stream": "stderr", "text": "\U0001f600"}]
    assert result["empty"] is True
