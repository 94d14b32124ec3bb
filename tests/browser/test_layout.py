"""The live and replay pages fit the window from 1,024 px up, with one, three and ten people
present: no page wider than its window, every header control inside it, the workspace's name
whole, presence folded to "+N" past four people with everyone a click away; the side panels
and the turns panel resize, and a turn's diff scrolls in its own box.

The other people are guests on plain sockets (``crowd``): one browser page, its viewport
resized between measurements."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    crowd,
    open_new_workspace,
)

pytestmark = pytest.mark.browser

WIDTHS = (1024, 1280, 1440, 1920)
HEIGHT = 860
NAME = "Spring term pairing workspace"
# A turn whose file has lines far wider than any panel: its diff must scroll, not widen the page.
WIDE = "".join(f"value_{i} = {i!r} + {'x' * 160!r}  # {'long comment ' * 6}\n" for i in range(24))
WRITE_WIDE = f'[rate:20000][say]Writing wide.py.\n<write path="wide.py">\n{WIDE}</write>\nDone.\n[/say]'

# Where the page's parts are, at the current viewport: the widths that must fit, the header's
# controls (each: inside the window and not hidden), and whether the breadcrumb is whole.
MEASURE = """(controls) => {
    const inside = (node) => {
        if (!node) return "missing";
        const box = node.getBoundingClientRect();
        if (box.width === 0 || box.height === 0) return "hidden";
        if (box.left < 0 || box.top < 0 || box.right > innerWidth || box.bottom > innerHeight) {
            const [x0, x1, y0, y1] = [box.left, box.right, box.top, box.bottom].map(Math.round);
            return `outside: x ${x0}..${x1}, y ${y0}..${y1}`;
        }
        const at = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        return at && (node === at || node.contains(at) || at.contains(node)) ? "ok" : "covered";
    };
    const crumb = document.querySelector(".topbar .crumb");
    const placed = {};
    for (const [name, selector] of Object.entries(controls)) placed[name] = inside(document.querySelector(selector));
    const right = (selector) => {
        const node = document.querySelector(selector);
        return node ? node.getBoundingClientRect().right : 0;
    };
    const parts = [".topbar", "main", ".side-panels", ".transcript", ".history", ".replay-controls"];
    return {
        width: innerWidth,
        page: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
        widest: Math.max(...parts.map(right)),
        crumbWhole: crumb ? crumb.scrollWidth <= crumb.clientWidth : null,
        header: Math.round(document.querySelector(".topbar").getBoundingClientRect().height),
        placed,
    };
}"""

LIVE_CONTROLS = {
    "sign out": ".topbar .account button[type=submit]",
    "api tokens": ".topbar .account a[href$='/tokens/']",
    "watchdog": "#guard-setting summary",
    "presence": "#presence",
    "present": "#present",
    "invite": ".invites summary",
    "people": ".members summary",
    "public page": "#public-share summary",
    "export": "#export",
    "send": "#prompt [data-action=send]",
    "effort": "#prompt select[name=effort]",
    "follow": "#follow",
    "run": "#run-controls [data-run=run]",
    "side splitter": "[data-splitter=live-side]",
}
REPLAY_CONTROLS = {
    "sign out": ".topbar .account button[type=submit]",
    "api tokens": ".topbar .account a[href$='/tokens/']",
    "play": "[data-action=play]",
    "speed": "[data-field=speed]",
    "scrubber": "#replay-scrubber",
    "clock": ".replay-clock",
    "transcript": "#replay-transcript",
}


def _measure(page: Any, controls: dict[str, str], label: str) -> list[str]:
    """At each width: what does not fit (empty when all does)."""
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        got = page.evaluate(MEASURE, controls)
        print(label, width, got["page"], got["header"])  # the run's figures, with -s
        where = f"{label} at {width} px"
        if got["page"] > width or got["widest"] > width:
            problems.append(f"{where}: the page is {got['page']} px wide (its parts reach {got['widest']})")
        if got["crumbWhole"] is False:
            problems.append(f"{where}: the workspace name is cut")
        problems += [f"{where}: {name} is {state}" for name, state in got["placed"].items() if state != "ok"]
    return problems


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def test_the_live_and_replay_pages_fit_from_1024_px_with_one_three_and_ten_people(
    ide_server: IdeServer, page: Any
) -> None:
    open_new_workspace(ide_server, page, NAME)
    assert page.locator("#context-strip .context-meter").is_hidden()  # nothing to carry: no empty gauge
    create_file(page, "wide.py")
    _ask(page, WRITE_WIDE)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    diff = page.locator(".history-diff").first
    diff.locator("summary").click()
    diff.locator(".diff-body pre").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#guard-setting summary").wait_for(timeout=LIVE_WAIT_MS)

    effort = page.get_by_label("Effort")  # the drop-down has a visible label
    assert effort.evaluate("(node) => node.name") == "effort"
    problems = _measure(page, LIVE_CONTROLS, "alone")
    with crowd(ide_server, page) as people:
        people.join("Grace", "Alan Mathison")
        page.locator("#presence .person").nth(2).wait_for(timeout=LIVE_WAIT_MS)
        assert page.locator("#presence-more").is_hidden()  # three people all show
        problems += _measure(page, LIVE_CONTROLS, "3 people")

        people.join(*(f"Guest number {n}" for n in range(7)))
        more = page.locator("#presence-more summary")
        more.filter(has_text="+7").wait_for(timeout=LIVE_WAIT_MS)
        assert page.locator("#presence .person").count() == 3
        assert page.locator("#presence .person").first.inner_text().startswith("local (you)")
        problems += _measure(page, {**LIVE_CONTROLS, "+7": "#presence-more summary"}, "10 people")

        # Everyone is a click away, in a panel inside the window.
        page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
        more.click()
        everyone = page.locator("#presence-more [data-presence=all] .person")
        assert everyone.count() == 10
        names = everyone.all_inner_texts()
        assert any(name.startswith("Alan Mathison (guest)") for name in names), names
        panel = page.locator("#presence-more .presence-panel").bounding_box()
        assert panel is not None and panel["x"] >= 0 and panel["x"] + panel["width"] <= WIDTHS[0]
        more.click()

    page.locator("#history a", has_text="Replay this session").click()
    # The replay page rebuilds the session from its stored events (ten people's turns with long
    # lines): on a CI machine busy with the real-model tests that took over 20 s once.
    page.locator("#replay[data-ready=true]").wait_for(timeout=3 * LIVE_WAIT_MS)
    page.locator("#replay-scrubber").evaluate(  # the end: the turn and its long lines shown
        "(range) => { range.value = range.max; range.dispatchEvent(new Event('input')); }"
    )
    page.locator("#replay-transcript .turn").first.wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-editor .cm-content", has_text="value_23").wait_for(timeout=LIVE_WAIT_MS)
    problems += _measure(page, REPLAY_CONTROLS, "replay")
    assert problems == [], "\n".join(problems)


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box  # type: ignore[no-any-return]


def test_the_turns_panel_widens_and_grows_and_its_diff_scrolls(ide_server: IdeServer, page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_new_workspace(ide_server, page, "turns panel")
    create_file(page, "wide.py")
    _ask(page, WRITE_WIDE)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".history-diff summary").first.click()
    body = page.locator(".history-diff .diff-body").first
    body.locator("pre").wait_for(timeout=LIVE_WAIT_MS)

    # The diff scrolls in its own box, which stays inside the panel and the window.
    sizes = body.evaluate("(node) => [node.scrollWidth, node.clientWidth, node.scrollHeight, node.clientHeight]")
    assert sizes[0] > sizes[1] and sizes[2] > sizes[3], sizes
    body.evaluate("(node) => { node.scrollLeft = 300; node.scrollTop = 100; }")
    assert body.evaluate("(node) => [node.scrollLeft, node.scrollTop]") == [300, 100]
    history, diff = _box(page, "#history"), _box(page, ".history-diff .diff-body")
    assert diff["x"] + diff["width"] <= history["x"] + history["width"] <= 1280
    assert diff["height"] <= history["height"]

    # Dragged 300 px to the left, the side column is 300 px wider, and so is the diff's box.
    side = _box(page, ".side-panels")
    handle = _box(page, "[data-splitter=live-side]")
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y, steps=3)
    page.mouse.move(x - 300, y, steps=3)
    page.mouse.up()
    wider = _box(page, ".side-panels")
    assert abs(wider["width"] - side["width"] - 300) <= 2, (side, wider)
    assert _box(page, ".history-diff .diff-body")["width"] >= diff["width"] + 298

    # The turns panel takes more height from the transcript (keyboard: the handle's arrows).
    turns = _box(page, ".history-panel")["height"]
    page.locator("[data-splitter=live-turns]").focus()
    for _ in range(3):
        page.keyboard.press("Shift+ArrowUp")
    taller = _box(page, ".history-panel")["height"]
    assert abs(taller - turns - 3 * 64) <= 2, (turns, taller)
    assert page.locator("[data-splitter=live-turns]").get_attribute("aria-valuetext") == f"{round(taller)} pixels"

    # Kept across a reload; a narrower window clamps them, never the page wider than it.
    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    assert abs(_box(page, ".side-panels")["width"] - wider["width"]) <= 2
    assert abs(_box(page, ".history-panel")["height"] - taller) <= 2
    page.set_viewport_size({"width": 1024, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024
    assert _box(page, ".editor-pane")["width"] >= 22 * 16 - 1

    # Home gives the default back.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.locator("[data-splitter=live-side]").focus()
    page.keyboard.press("Home")
    assert abs(_box(page, ".side-panels")["width"] - side["width"]) <= 2
