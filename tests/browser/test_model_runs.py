"""The model's runs and test rounds on the live page (issue 30), as a person sees them: a run
the model started is marked so in the run panel (an "AI" badge, "run by the model for Ada's
turn") with its whole command, and the person can still stop it; when it ends its turn's
transcript gets one line ("ran `pytest -x -q`: failed (exit 1)"); a round the IDE's tests
started reads "tests: 3 passed, 1 failed → round 2"; a turn that ends with the tests passing
says so in a success look.

Here the events come from the page's own session socket, intercepted (Playwright's
``route_web_socket``): the real server's frames go through, and the test adds a model's run
and a test round to them, as the server sends them (spark_ide/live/events.py). The words of
the lines are also checked under Node (transcript_runs.js).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.conftest import LIVE_WAIT_MS, ROOT, IdeServer, open_new_workspace
from tests.support.node import run_node

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

    # Its end: the panel says how it ended; the turn gets one line, not the output.
    socket.tell(**_run_finished(RUN, "failed", 1))
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
const { ModelRuns, roundLine } = await import(RUNS);
const { runCommand, runOutcome } = await import(WORDS);
const runs = new ModelRuns();
runs.started({ run: "a", model: true, turn: "t1", command: "python main.py 3" });
runs.started({ run: "b", model: false, turn: "", command: "pytest" });
runs.started({ run: "c", model: true, turn: "t2", command: "", path: "", tests: true });
const ends = [
  runs.finished({ run: "a", status: "ok", exit_code: 0 }),
  runs.finished({ run: "b", status: "failed", exit_code: 1 }),
  runs.finished({ run: "c", status: "timeout", exit_code: null }),
  runs.finished({ run: "a", status: "ok", exit_code: 0 }),
];
for (let i = 0; i < 40; i += 1) runs.started({ run: `r${i}`, model: true, turn: "t", command: "pytest" });
console.log(JSON.stringify({
  ends,
  kept: runs.open.size,
  newest: runs.open.has("r39"),
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
    assert result["ends"] == [
        {"turn": "t1", "text": "\n\n▶ ran `python main.py 3`: ok (exit 0)\n\n"},
        None,  # a person's run: no line
        {"turn": "t2", "text": "\n\n▶ ran `pytest`: timeout\n\n"},  # no command named: what it stands for
        None,  # told twice
    ]
    assert result["kept"] == 16 and result["newest"] is True  # ends that never come do not pile up
    assert result["rounds"] == [
        "\n\n↻ Round 2: the model got its 1 tool result and goes on.\n\n",
        "\n\n↻ Round 3: the model got its 2 tool results, 1 failed and goes on.\n\n",
        "\n\n↻ tests: 1 passed, 2 failed → round 4\n\n",
    ]
    assert result["commands"] == ["pytest -x -q", "pytest", "python main.py"]  # an older server names none
    assert result["outcomes"] == ["output truncated (exit 0)", "not run: there is no file 'x.py' to run", "killed"]
