"""The model's runs and test rounds on the live page (issue 30), as a person sees them: a run
the model started is marked so in the run panel (an "AI" badge, "run by the model for Ada's
turn") with its whole command, and the person can still stop it; when it ends its turn's
transcript gets one line ("ran `pytest -x -q`: failed (exit 1)"); a round the IDE's tests
started reads "tests: 1 failed → round 4"; a turn that ends with the tests passing says so in
a success look.

End to end: our scripted model server plays ``run`` and ``apply_patch`` custom tool calls
(``--script-file``) to an IDE that offers them (``SPARK_EDIT_STYLE=apply-patch``), whose
sandbox runs the code. Beside it, the page's own session socket, intercepted (Playwright's
``route_web_socket``), gets events the test adds as the server sends them
(spark_ide/live/events.py), for what a real run does not make certain (a run long enough to
look at). The words of the lines are also checked under Node (transcript_runs.js).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    ROOT,
    IdeServer,
    create_file,
    open_new_workspace,
    scripted_ide,
    server_text,
    wait_for_server_text,
)
from tests.browser.test_live_pairing import _ask
from tests.pairing.test_model_runs import patch, run
from tests.support.node import run_node

APP = "def add(a, b):\n    return a - b\n"
TESTS = "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SLOW = "import time\n\nprint('waiting', flush=True)\ntime.sleep(60)\n"


SCRIPTS = {
    # Round 1 runs the tests (red), 2 breaks add another way, 3 says it is done: the IDE's
    # tests are red, round 4 is asked to fix them and does, 5 is done: the tests pass.
    "fix": [
        ["Running the tests first.", run("call_1", "pytest -x -q")],
        ["It subtracts. Fixing add.", patch("call_2", "return a - b", "return a * b")],
        "Done, I think.",
        ["Oops.", patch("call_3", "return a * b", "return a + b")],
        "Fixed.",
    ],
    "slow": [["Let me run it.", run("call_s", "python slow.py")], "It was stopped."],
}
# Every state of the run panel's header, as it changes: "command | who ran it".
WATCH_HEAD = """() => {
    window.runHeads = [];
    const command = document.querySelector("#run-panel [data-run=command]");
    const by = document.querySelector("#run-panel [data-run=by]");
    const note = () => {
        const head = `${command.textContent} | ${by.textContent}`;
        if (window.runHeads[window.runHeads.length - 1] !== head) window.runHeads.push(head);
    };
    const watch = new MutationObserver(note);
    for (const node of [command, by]) watch.observe(node, { childList: true, characterData: true, subtree: true });
}"""
TURN = "turn-model-runs"
RUN = "run-model-1"


class Socket:
    """The page's session socket, through the test: what the server sends reaches the page,
    what the page sends reaches the server, and ``tell`` adds an event of the test's own."""

    def __init__(self, page: Any) -> None:
        self.page_side: Any = None
        self.sent: list[dict[str, Any]] = []  # the page's JSON messages, in order
        page.route_web_socket("**/ws/**", self._route)

    def _route(self, ws: Any) -> None:
        server = ws.connect_to_server()
        ws.on_message(lambda message: self._from_page(server, message))
        server.on_message(ws.send)
        self.page_side = ws

    def _from_page(self, server: Any, message: str | bytes) -> None:
        if isinstance(message, str):
            self.sent.append(json.loads(message))
        server.send(message)

    def tell(self, **event: Any) -> None:
        assert self.page_side is not None, "the page has no session socket"
        self.page_side.send(json.dumps(event))


@pytest.fixture(scope="module")
def runs_server(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    """An IDE offering the apply_patch and run tools; its model server knows SCRIPTS."""
    data = tmp_path_factory.mktemp("ide-model-runs")
    with scripted_ide(ide_server, data, SCRIPTS, SPARK_EDIT_STYLE="apply-patch", SPARK_AUTO_TEST="on") as server:
        yield server


def _file(page: Any, path: str, text: str) -> None:
    create_file(page, path)
    # The new file's editor, empty, before typing (not the last file's, still on screen a moment).
    page.wait_for_function("() => document.querySelector('.cm-content')?.innerText.trim() === ''")
    page.locator(".cm-content").click()
    page.keyboard.insert_text(text)
    wait_for_server_text(page, path, text)


def _late_page(page: Any) -> Any:
    """The session opened in a new page now: its transcript is what the server sent it."""
    late = page.context.new_page()
    late.goto(page.url)
    late.locator(".turn .turn-foot").first.wait_for(timeout=LIVE_WAIT_MS)
    return late


def _replayed(page: Any) -> Any:
    """The session's replay in a new page, at its end."""
    link = page.locator("#history a", has_text="Replay this session")
    link.wait_for(state="attached", timeout=LIVE_WAIT_MS)
    replay = page.context.new_page()
    replay.goto(urljoin(page.url, str(link.get_attribute("href"))))
    replay.locator("#replay[data-ready=true]").wait_for(timeout=LIVE_WAIT_MS)
    replay.locator("#replay-scrubber").evaluate(
        "(range) => { range.value = range.max; range.dispatchEvent(new Event('input')); }"
    )
    replay.locator("#replay-transcript .turn .turn-foot").first.wait_for(timeout=LIVE_WAIT_MS)
    return replay


@pytest.mark.browser
def test_the_model_runs_the_tests_reads_the_failure_and_fixes_it_live_and_a_person_stops_its_run(
    runs_server: IdeServer, page: Any,
) -> None:
    open_new_workspace(runs_server, page, "model runs live")
    _file(page, "test_app.py", TESTS)
    _file(page, "slow.py", SLOW)
    _file(page, "app.py", APP)
    page.evaluate(WATCH_HEAD)
    panel = page.locator("#run-panel")
    model_run = "AI run by the model for local's turn"

    _ask(page, "[rate:200][script:fix]")
    turn = page.locator(".turn").last
    turn.locator(".turn-foot").wait_for(timeout=3 * LIVE_WAIT_MS)
    assert turn.locator(".turn-foot").get_attribute("data-reason") == "tests_passed"
    assert turn.locator(".turn-foot .reason").inner_text() == "the tests pass"
    assert server_text(page, "app.py") == APP.replace("a - b", "a + b")

    # The run panel showed the model's own run, then the IDE's two test runs, each marked as
    # the model's (for the turn of the person who asked), each with its whole command.
    heads = page.evaluate("() => window.runHeads")
    assert [head for head in heads if head.endswith(model_run)] == [
        f"pytest -x -q | {model_run}", f"pytest | {model_run}",
    ], heads  # the two test runs show the same header: one state
    assert "model-run" in str(panel.get_attribute("class"))
    panel.locator(".run-end[data-status='ok']").wait_for(timeout=LIVE_WAIT_MS)

    # The turn tells each run in a line, each round in a line, in order.
    lines = [
        "▶ ran `pytest -x -q`: failed (exit 1)",
        "↻ Round 2: the model got its 1 tool result, 1 failed and goes on.",
        "↻ Round 3: the model got its 1 tool result and goes on.",
        "▶ ran `pytest`: failed (exit 1)",
        "↻ tests: 1 failed → round 4",
        "↻ Round 5: the model got its 1 tool result and goes on.",
        "▶ ran `pytest`: ok (exit 0)",
    ]
    prose = turn.locator(".prose").inner_text()
    places = [prose.find(line) for line in lines]
    assert -1 not in places and places == sorted(places), prose
    assert "test_add" not in prose  # the output stays in the run panel

    # A page that loads now, and the session's replay, tell the runs as the live page did
    # (turn.ran is in the event log).
    for late in (_late_page(page), _replayed(page)):
        prose = late.locator(".turn").first.locator(".prose").inner_text()
        places = [prose.find(line) for line in lines]
        assert -1 not in places and places == sorted(places), prose
        late.close()

    # A run of the model that takes long: the person stops it from the run panel.
    _ask(page, "[rate:200][script:slow]")
    panel.locator(".run-command", has_text="python slow.py").wait_for(timeout=LIVE_WAIT_MS)
    panel.locator(".run-output", has_text="waiting").wait_for(timeout=LIVE_WAIT_MS)
    assert panel.locator(".run-by").inner_text() == model_run
    assert page.locator("#run-controls [data-run=run]").is_hidden()
    panel.locator("[data-run=stop]").click()
    panel.locator(".run-end[data-status='killed']").wait_for(timeout=LIVE_WAIT_MS)
    slow = page.locator(".turn").last
    slow.locator(".turn-foot").wait_for(timeout=LIVE_WAIT_MS)
    prose = slow.locator(".prose").inner_text()
    assert "▶ ran `python slow.py`: killed" in prose, prose
    assert "↻ Round 2: the model got its 1 tool result, 1 failed and goes on." in prose, prose
    assert "It was stopped." in prose
    assert page.locator("#run-controls [data-run=run]").is_enabled()


def _run_started(**fields: Any) -> dict[str, Any]:
    return {"type": "run.started", "run": RUN, "path": "", "tests": True, "by": "local", **fields}


def _run_finished(run: str, status: str, exit_code: int | None) -> dict[str, Any]:
    return {
        "type": "run.finished", "run": run, "exit_code": exit_code, "duration_ms": 41, "status": status,
        "truncated": False, "message": "", "sandboxed": True,
    }


@pytest.mark.browser
def test_a_model_run_is_marked_stoppable_and_a_line_of_its_turn_and_test_rounds_say_their_verdict(
    ide_server: IdeServer, page: Any,
) -> None:
    socket = Socket(page)
    open_new_workspace(ide_server, page, "model runs")
    panel = page.locator("#run-panel")
    turn = page.locator(f".turn[data-turn='{TURN}']")

    # A person's run with arguments: its whole command, who ran it, no AI badge.
    socket.tell(**_run_started(run="run-person", path="main.py", tests=False, command="python main.py 3", model=False))
    panel.locator(".run-command", has_text="python main.py 3").wait_for(timeout=LIVE_WAIT_MS)
    assert panel.locator(".run-by").inner_text() == "by local"
    assert panel.locator(".run-model").count() == 0
    socket.tell(**_run_finished("run-person", "ok", 0))
    panel.locator(".run-end[data-status='ok']").wait_for(timeout=LIVE_WAIT_MS)

    # The model's turn runs the tests through its run tool: marked in the panel, whole command.
    socket.tell(type="turn.started", turn=TURN, prompt="make the tests pass", author="local")
    socket.tell(type="turn.prose", turn=TURN, text="Running the tests.")
    socket.tell(**_run_started(command="pytest -x -q tests/test_app.py", model=True, turn=TURN))
    panel.locator(".run-command", has_text="pytest -x -q tests/test_app.py").wait_for(timeout=LIVE_WAIT_MS)
    assert panel.locator(".run-model").inner_text() == "AI"
    assert panel.locator(".run-by").inner_text() == "AI run by the model for local's turn"
    assert "model-run" in str(panel.get_attribute("class"))
    socket.tell(type="run.output", run=RUN, stream="stdout", text="F..\n")
    panel.locator(".run-output", has_text="F..").wait_for(timeout=LIVE_WAIT_MS)

    # The person may stop the model's run, as any run: Stop sends run.stop with its id (the
    # real server answers no_such_run: it never started this one).
    stop = panel.locator("[data-run=stop]")
    assert stop.is_enabled() and page.locator("#run-controls [data-run=stop]").is_enabled()
    stop.click()
    page.locator(".toast", has_text="that run is not going on").wait_for(timeout=LIVE_WAIT_MS)
    assert [sent for sent in socket.sent if sent.get("type") == "run.stop"] == [{"type": "run.stop", "run": RUN}]

    # Its end: the panel says how it ended (run.finished); the turn gets one line, not the
    # output (turn.ran, the event log's: a late page and the replay get it too).
    socket.tell(**_run_finished(RUN, "failed", 1))
    socket.tell(
        type="turn.ran", turn=TURN, run=RUN, command="pytest -x -q tests/test_app.py", status="failed", exit_code=1,
    )
    panel.locator(".run-end[data-status='failed']").wait_for(timeout=LIVE_WAIT_MS)
    ran = "▶ ran `pytest -x -q tests/test_app.py`: failed (exit 1)"
    turn.locator(".prose", has_text=ran).wait_for(timeout=LIVE_WAIT_MS)
    assert "F.." not in turn.inner_text()

    # A tool round and a test round: each a line of the turn's prose.
    socket.tell(type="turn.round", turn=TURN, round=2, calls=1, failed=1, verdict="")
    socket.tell(type="turn.round", turn=TURN, round=3, calls=0, failed=0, verdict="3 passed, 1 failed")
    verdict = "↻ tests: 3 passed, 1 failed → round 3"
    turn.locator(".prose", has_text=verdict).wait_for(timeout=LIVE_WAIT_MS)
    prose = turn.locator(".prose").inner_text()
    tool_round = "↻ Round 2: the model got its 1 tool result, 1 failed and goes on."
    assert prose.index("Running the tests.") < prose.index(ran) < prose.index(tool_round) < prose.index(verdict), prose

    # A run of another turn's, or a person's, adds nothing to this turn.
    socket.tell(**_run_started(run="run-person-2", command="pytest", model=False, turn=""))
    socket.tell(**_run_finished("run-person-2", "ok", 0))
    panel.locator(".run-by", has_text="by local").wait_for(timeout=LIVE_WAIT_MS)
    assert panel.locator(".run-model").count() == 0 and "model-run" not in str(panel.get_attribute("class"))

    # The turn ends with the tests passing: a success look, not an error's.
    socket.tell(type="turn.finished", turn=TURN, status="completed", reason="tests_passed", metrics={"tokens": 12})
    foot = turn.locator(".turn-foot[data-reason='tests_passed']")
    foot.wait_for(timeout=LIVE_WAIT_MS)
    assert foot.locator(".badge.outcome").inner_text() == "completed"
    reason = foot.locator(".reason")
    assert reason.inner_text() == "the tests pass"
    assert reason.evaluate("(node) => getComputedStyle(node).color") == "rgb(47, 158, 68)"  # --ok
    assert reason.evaluate("(node) => getComputedStyle(node, '::before').content") == '"✓ "'
    assert foot.locator(".error").count() == 0
    assert turn.locator(".prose").inner_text().count("ran `") == 1


LINES = """
const { roundLine, runLine } = await import(RUNS);
const { runCommand, runOutcome } = await import(WORDS);
console.log(JSON.stringify({
  ends: [
    runLine("python main.py 3", { status: "ok", exit_code: 0 }),
    runLine("pytest", { status: "timeout", exit_code: null }),
    runLine("", { status: "failed", exit_code: 1 }),
  ],
  rounds: [
    roundLine({ round: 2, calls: 1, failed: 0, verdict: "" }),
    roundLine({ round: 3, calls: 2, failed: 1 }),
    roundLine({ round: 4, calls: 0, failed: 0, verdict: "1 passed, 2 failed" }),
  ],
  commands: [
    runCommand({ command: "pytest -x -q", path: "", tests: true }),
    runCommand({ command: "", path: "", tests: true }),
    runCommand({ command: "", path: "main.py", tests: false }),
  ],
  outcomes: [
    runOutcome({ status: "output_truncated", exit_code: 0 }),
    runOutcome({ status: "failed", exit_code: null, error: "bad_run", message: "there is no file 'x.py' to run" }),
    runOutcome({ status: "killed", exit_code: null }),
  ],
}));
"""


def test_the_lines_of_rounds_and_runs_say_what_happened_in_few_words() -> None:
    live = ROOT / "static/src/live"
    result = run_node(LINES, RUNS=(live / "transcript_runs.js").as_uri(), WORDS=(live / "run_words.js").as_uri())
    assert result["ends"] == [  # turn.ran's line
        "▶ ran `python main.py 3`: ok (exit 0)", "▶ ran `pytest`: timeout", "▶ ran `a command`: failed (exit 1)",
    ]
    assert result["rounds"] == [
        "↻ Round 2: the model got its 1 tool result and goes on.",
        "↻ Round 3: the model got its 2 tool results, 1 failed and goes on.",
        "↻ tests: 1 passed, 2 failed → round 4",
    ]
    assert result["commands"] == ["pytest -x -q", "pytest", "python main.py"]  # an older server names none
    assert result["outcomes"] == ["output truncated (exit 0)", "not run: there is no file 'x.py' to run", "killed"]
