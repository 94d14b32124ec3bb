"""The security watchdog on the live page (issue 15), as a person meets it: code typed into a
file gets a lint mark on the flawed line, whose tooltip names the flaw and the fix; running it
first asks, listing the finding, and "Run anyway" runs it; a model that writes the same flaw is
halted, and the transcript says so, with the place and a link to the watchdog's correction turn.
Also, under Node, what the page does with a finding's line and with the ephemeral
guard.diagnostics event in its order check."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import ROOT, IdeServer, create_file, open_new_workspace, wait_for_server_text
from tests.support.node import run_node

WAIT_MS = 20_000
# Line 3 builds a shell command from a variable: a high-severity finding. Run, it only echoes.
TYPED = 'import os\npath = "nothing-here"\nos.system("echo " + path)\n'
# What the scripted model writes: the same flaw, in a file of its own.
WRITTEN = '<write path="users.py">\nimport os\n\n\ndef wipe(path):\n    os.system("rm -rf " + path)\n</write>\n'


@pytest.mark.browser
def test_findings_mark_the_editor_ask_before_a_run_and_halt_the_model(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "watchdog")
    create_file(page, "danger.py")
    page.locator(".cm-content").click()
    page.keyboard.type(TYPED)
    wait_for_server_text(page, "danger.py", TYPED)

    # The lint gutter marks line 3 as an error; the tooltip says what is wrong and the fix.
    marker = page.locator(".cm-gutter-lint .cm-lint-marker-error")
    marker.wait_for(timeout=WAIT_MS)
    assert marker.count() == 1
    marker_box, line_box = marker.bounding_box(), page.locator(".cm-line").nth(2).bounding_box()
    assert abs(marker_box["y"] + marker_box["height"] / 2 - (line_box["y"] + line_box["height"] / 2)) < 4
    assert page.locator(".cm-lintRange-error").inner_text() == 'os.system("echo " + path)'
    marker.hover()
    tooltip = page.locator(".cm-tooltip-lint .cm-diagnostic-error")
    tooltip.wait_for(timeout=WAIT_MS)
    tip = tooltip.inner_text()
    assert "os.system" in tip and "Fix:" in tip and "watchdog · os-system" in tip

    # Run: the dialog lists the finding and runs nothing; Run anyway runs it.
    page.locator("#run-controls [data-run=run]").click()
    dialog = page.locator("#run-confirm")
    dialog.wait_for(state="visible", timeout=WAIT_MS)
    finding = dialog.locator(".run-confirm-finding")
    assert finding.count() == 1
    assert finding.locator(".run-confirm-place").inner_text() == "danger.py:3"
    assert finding.locator(".run-confirm-message").inner_text().startswith("runs os.system()")  # no "line 3"
    assert page.locator("#run-panel").is_hidden()  # nothing ran
    dialog.get_by_role("button", name="Run anyway").click()
    dialog.wait_for(state="hidden", timeout=WAIT_MS)
    page.locator("#run-panel .run-command", has_text="python danger.py").wait_for(timeout=WAIT_MS)
    page.locator("#run-panel .run-output", has_text="nothing-here").wait_for(timeout=WAIT_MS)

    # The model writes the flaw: halted, rolled back, corrected by a turn the watchdog starts.
    create_file(page, "users.py")
    page.locator(".tab", has_text="danger.py").click()
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:400][say]{WRITTEN}[/say]")
    box.press("Enter")
    first = page.locator(".turn").first
    halted = first.locator(".guard-finding.halted")
    halted.wait_for(timeout=WAIT_MS)
    text = halted.inner_text()
    assert text.startswith("Watchdog halted the model: users.py line 5 — runs os.system()"), text
    assert "Fix asked for:" in text
    first.locator(".turn-foot .reason", has_text="halted by the watchdog").wait_for(timeout=WAIT_MS)
    # (The scripted model answers the correction with the same flaw: more turns may follow.)
    corrected_by = halted.locator(".guard-correction").get_attribute("data-correction")
    correction = page.locator(f'.turn[data-turn="{corrected_by}"]')
    correction.wait_for(timeout=WAIT_MS)
    assert "watchdog-turn" in (correction.get_attribute("class") or "")
    assert correction.locator(".badge.watchdog-steer").inner_text() == "steered by watchdog"
    halted.locator(".guard-correction").click()
    assert "flash" in (correction.get_attribute("class") or "")
    halted.locator(".guard-loc").click()  # opens the file the finding is in
    page.locator(".tab.active", has_text="users.py").wait_for(timeout=WAIT_MS)

    # The replay shows the halt under its turn too, and its place opens the file there.
    page.locator("#history a", has_text="Replay this session").click()
    page.wait_for_url("**/replay")
    page.locator("#replay[data-ready=true]").wait_for(timeout=WAIT_MS)
    page.locator("#replay-scrubber").evaluate(
        "(range) => { range.value = range.max; range.dispatchEvent(new Event('input')); }"
    )
    replayed = page.locator("#replay-transcript .turn").first.locator(".guard-finding.halted")
    replayed.wait_for(timeout=WAIT_MS)
    assert replayed.inner_text().startswith("Watchdog halted the model: users.py line 5 — runs os.system()")
    replayed.locator(".guard-loc").click()
    page.locator("#replay-files button.active[data-path='users.py']").wait_for(timeout=WAIT_MS)


# Feeds the page's order check an ephemeral diagnostics event with the current seq (it used to
# drop such events as repeats), and turns findings into editor diagnostics over a small text.
PURE = """
const { EventOrder } = await import(ORDER);
const { toDiagnostic } = await import(DIAGNOSTICS);
const order = new EventOrder();
const accepted = [["hello", 7], ["turn.finished", 8], ["guard.diagnostics", 8], ["guard.diagnostics", 8],
  ["guard.finding", 8]].map(([type, seq]) => order.accept({ type, seq }));
const lines = ["import os", "", "    os.system(cmd)"];
let at = 0;
const starts = lines.map((text) => { const from = at; at += text.length + 1; return { text, from }; });
const doc = { lines: lines.length, line: (n) => ({ ...starts[n - 1], to: starts[n - 1].from + lines[n - 1].length,
  length: lines[n - 1].length, number: n }) };
const found = (line, severity) => {
  const { from, to, severity: shown, message, source } = toDiagnostic(
    { line, severity, rule: "os-system", message: "line 3 runs a shell.", fix: "use subprocess.run([...])" }, doc);
  return { from, to, shown, message, source };
};
console.log(JSON.stringify({ accepted, found: [found(3, "high"), found(40, "medium"), found(0, "low")] }));
"""


def test_diagnostics_pass_the_order_check_and_their_lines_are_clamped() -> None:
    result = run_node(
        PURE, ORDER=(ROOT / "static/src/live/event_order.js").as_uri(),
        DIAGNOSTICS=(ROOT / "static/src/live/diagnostics.js").as_uri(),
    )
    assert result["accepted"] == [True, True, True, True, False]  # a finding at seq 8 is a repeat
    high, beyond, before = result["found"]
    # The underline starts at the code, not at the indentation; severities map to CodeMirror's.
    assert high == {
        "from": 15, "to": 29, "shown": "error", "message": "runs a shell. Fix: use subprocess.run([...])",
        "source": "watchdog · os-system",
    }
    assert (beyond["from"], beyond["to"], beyond["shown"]) == (15, 29, "warning")  # past the end: the last line
    assert (before["from"], before["to"], before["shown"]) == (0, 9, "info")  # before the start: the first
