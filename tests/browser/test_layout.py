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
WIDE = "".join(f"value_{i} = {i!r} + {'x' * 160!r}  # {'long comment ' * 6}\n" for i in range(40))
WRITE_WIDE = f'[rate:4000][say]Writing wide.py.\n<write path="wide.py">\n{WIDE}</write>\nDone.\n[/say]'

# Where the page's parts are, at the current viewport: the widths that must fit, the header's
# controls (each: inside the window and not hidden), and whether the breadcrumb is whole.
MEASURE = """(controls) => {
    const inside = (node) => {
        if (!node) return "missing";
        const box = node.getBoundingClientRect();
        if (box.width === 0 || box.height === 0) return "hidden";
        if (box.left < 0 || box.top < 0 || box.right > innerWidth || box.bottom > innerHeight) {
            return `outside: ${Math.round(box.left)}..${Math.round(box.right)} x ${Math.round(box.top)}..${Math.round(box.bottom)}`;
        }
        const at = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        return at && (node === at || node.contains(at) || at.contains(node)) ? "ok" : "covered";
    };
    const crumb = document.querySelector(".topbar .crumb");
    const placed = {};
    for (const [name, selector] of Object.entries(controls)) placed[name] = inside(document.querySelector(selector));
    const right = (selector) => { const node = document.querySelector(selector); return node ? node.getBoundingClientRect().right : 0; };
    return {
        width: innerWidth,
        page: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
        widest: Math.max(...[".topbar", "main", ".side-panels", ".transcript", ".history", ".replay-controls"].map(right)),
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
        print(label, width, got["page"], got["header"], got["crumbWhole"])  # noqa: T201 (the run's figures)
        page.screenshot(path=f"test-artifacts/layout-{label.replace(' ', '')}-{width}.png")
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
    create_file(page, "wide.py")
    _ask(page, WRITE_WIDE)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    diff = page.locator(".history-diff").first
    diff.locator("summary").click()
    diff.locator(".diff-body pre").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#guard-setting summary").wait_for(timeout=LIVE_WAIT_MS)

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
    page.locator("#replay[data-ready=true]").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-scrubber").evaluate(  # the end: the turn and its long lines shown
        "(range) => { range.value = range.max; range.dispatchEvent(new Event('input')); }"
    )
    page.locator("#replay-transcript .turn").first.wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-editor .cm-content", has_text="value_39").wait_for(timeout=LIVE_WAIT_MS)
    problems += _measure(page, REPLAY_CONTROLS, "replay")
    assert problems == [], "\n".join(problems)
