"""The first minutes with the live page, as a new user meets them (issue 11, items 4 and 5).

The transcript is the session's record: a reload in the middle of a turn, or someone joining
late, shows the past turns with their prose, blocks and outcomes, and the running turn under
its prompt. While the model has not answered, the status bar counts the wait. The rough edges:
panels and status fields inside the window at 1280x800 and 1920x1080, prompts instead of turn
ids, a refused prompt kept in the box, a favicon. The model is the scripted engine.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import ROOT, IdeServer, create_file, open_new_workspace, second_person
from tests.browser.test_live_pairing import _ask, _shot
from tests.support.node import run_node

pytestmark = pytest.mark.browser

LIVE = ROOT / "static/src/live"

WAIT_MS = 20_000
SIZES = ((1280, 800), (1920, 1080))
FIRST = 'Start the module\n[rate:300][say]First answer.\n<write path="a.py">\nfirst = 1\n</write>\nDone.\n[/say]'
TABLE = "".join(f"row_{i} = {i} * {i}\n" for i in range(40))
SLOW = (
    f'Write the slow table\n[ttft:2500][rate:60][say]Second answer.\n<write path="a.py">\n{TABLE}</write>\nEnd.\n[/say]'
)
WAITING = re.compile(r"waiting for first token… (\d+\.\d) s")
# The figures of the status bar: each must show whole (the turn and file labels may shorten).
FIGURES = ("connection", "rate", "ttft", "steer", "tokens", "rtt")


def _turn_ids(page: Any) -> list[str]:
    return [str(turn.get_attribute("data-turn")) for turn in page.locator("#transcript .turn").all()]


def _waited(page: Any) -> float:
    """The seconds the status bar says the model has kept us waiting."""
    field = page.locator("[data-field=ttft]")
    field.filter(has_text=WAITING).wait_for(timeout=WAIT_MS)
    found = WAITING.search(field.inner_text())
    assert found, f"no waiting time in {page.locator('.statusbar').inner_text()!r}"
    return float(found.group(1))


def _assert_inside(page: Any, locator: Any, what: str) -> None:
    """``locator`` lies inside the window, within a second: a panel that opens near the right
    edge is moved into view on its ``toggle`` event, which the browser fires a task after the
    click (a check right after the click could see it before the move)."""
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    for _ in range(20):
        box = locator.bounding_box()
        inside = box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        if inside and box["y"] >= 0 and box["y"] + box["height"] <= height:
            return
        page.wait_for_timeout(50)
    assert box is not None, f"{what} is not shown"
    cut = f"{what} is cut off at {width}x{height}: {box}"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, cut
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, cut


def _assert_status_bar_fits(page: Any) -> None:
    """Every status field lies inside the window, every figure unclipped, the bar not overflowing."""
    bar = page.locator(".statusbar")
    assert bar.evaluate("bar => bar.scrollWidth <= bar.clientWidth"), "the status bar overflows"
    shown = 0
    for field in bar.locator("[data-field]").all():
        if not field.is_visible():
            continue  # empty fields are not displayed
        shown += 1
        name = field.get_attribute("data-field")
        _assert_inside(page, field, f"the status field {name}")
        if name in FIGURES:
            assert field.evaluate("node => node.scrollWidth <= node.clientWidth"), f"{name} is clipped"
    assert shown >= 4


def _assert_favicon(page: Any, server: IdeServer) -> None:
    """The favicon is linked from the page, and /favicon.ico answers too (browsers ask for it)."""
    icon = page.locator("link[rel=icon]").get_attribute("href")
    for url in (f"{server.url}{icon}", f"{server.url}/favicon.ico"):
        answer = page.request.get(url)
        assert answer.status == 200, url
        assert answer.headers["content-type"].startswith("image/svg+xml")
        assert b"<svg" in answer.body()


def test_a_reload_mid_turn_and_a_late_joiner_see_the_transcript(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    open_new_workspace(ide_server, page, "first minutes transcript")
    create_file(page, "a.py")
    _ask(page, FIRST)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)

    _ask(page, SLOW)
    page.locator(".turn.running").wait_for(timeout=WAIT_MS)
    first_wait = _waited(page)
    page.wait_for_timeout(400)
    assert _waited(page) >= first_wait + 0.2, "the waiting time counts up"
    assert page.locator("[data-field=rate]").inner_text() == ""  # no figures of the last turn
    assert page.locator("[data-field=tokens]").inner_text() == ""
    _assert_status_bar_fits(page)
    first_id, slow_id = _turn_ids(page)

    page.reload()  # mid-turn, before its first token
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    turns = page.locator("#transcript .turn")
    turns.nth(1).locator(".turn-prompt", has_text="Write the slow table").wait_for(timeout=WAIT_MS)
    assert _turn_ids(page) == [first_id, slow_id]
    first = turns.nth(0)
    assert first.locator(".turn-prompt").inner_text().startswith("Start the module")
    assert "First answer." in first.locator(".prose").inner_text()
    assert first.locator(".chip[data-state='applied'] .chip-count").inner_text() == "+1"
    assert first.locator(".badge.outcome").inner_text() == "completed"
    page.locator("[data-field=ttft]", has_text="waiting for first token").wait_for(timeout=WAIT_MS)
    assert page.locator("[data-field=turn]").inner_text().startswith("Write the slow table")
    page.locator(".cm-content", has_text="row_3 = 3 * 3").wait_for(timeout=WAIT_MS)  # it streams on

    with second_person(ide_server, page, chromium, role="viewer", guest_name="Late") as late:  # a guest, joining late
        late.locator("#transcript .turn").nth(1).wait_for(timeout=WAIT_MS)
        for viewer in (page, late):
            slow = viewer.locator("#transcript .turn").nth(1)
            slow.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
            assert _turn_ids(viewer) == [first_id, slow_id]
            assert slow.locator(".turn-prompt").inner_text().startswith("Write the slow table")
            prose = slow.locator(".prose").inner_text()
            assert prose.count("Second answer.") == 1 and prose.count("End.") == 1
            assert slow.locator(".chip[data-state='applied'] .chip-count").inner_text() == "+40"
            assert viewer.locator("#transcript .turn").nth(0).locator(".badge.outcome").inner_text() == "completed"
            assert "(turn in progress)" not in viewer.locator("#transcript").inner_text()
        assert late.locator("[data-field=turn]").inner_text() == "Write the slow table · completed"
        _shot(late, "late_joiner")
        _assert_favicon(late, ide_server)  # a guest's browser asks for it too
    _shot(page, "reloaded_mid_turn")


def test_rough_edges_at_both_window_sizes(ide_server: IdeServer, page: Any) -> None:
    # A long name pushes the header's panels towards the right edge.
    open_new_workspace(ide_server, page, "first minutes: the rough edges of a workspace with a rather long name")
    create_file(page, "a.py")

    # A refused prompt stays in the box; a taken one leaves it once its turn starts.
    too_long = "x" * 20_001
    box = page.get_by_label("Prompt")
    _ask(page, too_long)
    page.locator(".toast.error", has_text="longer than").wait_for(timeout=WAIT_MS)
    assert box.input_value() == too_long
    assert page.locator(".turn").count() == 0
    slow = 'Write the slow table\n[rate:40][say]Writing.\n<write path="a.py">\n' + TABLE + "</write>\n[/say]"
    _ask(page, slow)
    page.locator(".turn.running").wait_for(timeout=WAIT_MS)
    assert box.input_value() == ""

    # The turn is named by its prompt; its id only in the tooltip and data attributes.
    page.locator(".cm-content", has_text="row_3 = 3 * 3").wait_for(timeout=WAIT_MS)
    first_id = _turn_ids(page)[0]
    turn_field = page.locator("[data-field=turn]")
    assert turn_field.inner_text() == "Write the slow table · running"
    assert first_id in str(turn_field.get_attribute("title"))
    _assert_status_bar_fits(page)
    _ask(page, 'Make it short instead\n[rate:300][say]Short.\n<write path="a.py">\nshort = 1\n</write>\n[/say]')
    steered = page.locator("#transcript .turn").nth(1)
    steered.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
    badge = steered.locator(".badge.steer")
    assert badge.inner_text() == "steered from “Write the slow table”"
    assert badge.get_attribute("data-steered-from") == first_id
    history = page.locator("#history")
    history.locator(".history-turn").nth(1).wait_for(timeout=WAIT_MS)
    history.locator(".badge.steer", has_text="steered").wait_for(timeout=WAIT_MS)
    for turn_id in _turn_ids(page):
        for text in (history.inner_text(), turn_field.inner_text(), page.locator("#transcript").inner_text()):
            assert turn_id not in text, f"the turn id {turn_id} is shown"

    # Once the connection has measured its round trip every status field has a value.
    page.locator("[data-field=rtt]", has_text="rtt").wait_for(timeout=WAIT_MS)
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        _assert_status_bar_fits(page)
        for name in ("tokens", "steer", "rate", "ttft"):
            assert page.locator(f"[data-field={name}]").inner_text(), f"{name} is empty"
        for item in page.locator(".topbar > *").all():
            if item.is_visible():
                _assert_inside(page, item, f"the header's {item.inner_text()[:20]!r}")
        assert page.locator(".topbar details").count() >= 1
        for details in page.locator(".topbar details:visible").all():  # "+N" shows past 4 people
            summary = details.locator("summary")
            summary.click()
            _assert_inside(page, details.locator(":scope > :not(summary)"), f"the {summary.inner_text()} panel")
            _shot(page, f"rough_edges_{width}_{summary.inner_text()}")
            summary.click()

    _assert_favicon(page, ide_server)


# The labels the page builds, under Node: what a structural merge did (an applied block's
# `detail.merge`, shown in its chip) and a prompt as a turn's name.
LABELS = """
const { mergeSummary } = await import(TRANSCRIPT);
const { shortPrompt } = await import(NOTICES);
console.log(JSON.stringify({ merges: MERGES.map(mergeSummary), prompts: PROMPTS.map(shortPrompt) }));
"""


def test_merge_summaries_and_short_prompts() -> None:
    merges = [
        {"replaced": ["is_prime"], "added": ["reverse_string"]},
        {"replaced": ["a", "B"], "added": []},
        {"added": ["main"]},
        {"inserted": True},
        {"replaced": [], "added": []},
        {"inserted": False},
        {"replaced": "is_prime", "added": [3, "ok"]},  # not lists of names: what is a name shows
        None,
    ]
    prompts = ["write a function that reverses a string", "  two\nlines  ", "", "x" * 60, "a  b\tc"]
    result = run_node(
        LABELS, TRANSCRIPT=(LIVE / "transcript.js").as_uri(), NOTICES=(LIVE / "notices.js").as_uri(),
        MERGES=merges, PROMPTS=prompts,
    )
    assert result["merges"] == [
        "replaced is_prime · added reverse_string",
        "replaced a, B",
        "added main",
        "inserted, the rest kept",
        "no change",
        "no change",
        "added ok",
        "",
    ]
    assert result["prompts"] == [
        "write a function that reverses a string", "two", "(no prompt)", "x" * 47 + "…", "a b c",
    ]
