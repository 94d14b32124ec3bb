"""A finished turn's row in the history panel gets its diff once the turn's record is stored
(``history.changed``), and an opened diff survives the panel being drawn again (after every turn,
and on a page's catch-up): it stays open and shows its diff, in a real browser. Before, a
redraw put a closed, unloaded copy in its place, and a diff opened in the moment between a
redraw's swap and htmx wiring the new panel stayed at "Loading the diff…" for good."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LIVE_WAIT_MS, IdeServer, create_file, open_new_workspace, second_person

pytestmark = pytest.mark.browser


def _redraws(page: Any) -> int:
    return int(page.evaluate("window.__historySwaps || 0"))


def _wait_redraw(page: Any, before: int) -> None:
    """Until the panel has been drawn again and settled (the page's policy allows no string
    evaluation, so no ``wait_for_function``)."""
    for _ in range(LIVE_WAIT_MS // 50):
        if _redraws(page) > before:
            return
        page.wait_for_timeout(50)
    raise AssertionError("the history panel was not drawn again")


def test_an_open_diff_stays_open_and_loaded_across_history_redraws(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "history diffs")
    create_file(page, "a.py")
    box = page.get_by_label("Prompt")
    box.fill('[rate:2000][say]Here.\n<write path="b.py">\nb = 2\n</write>\n[/say]')
    box.press("Enter")
    page.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)
    history = page.locator("#history")
    diff = history.locator(".history-diff").first
    # The panel is drawn when the turn's record (its files) is stored: history.changed. The
    # row gets its diff unasked.
    diff.wait_for(timeout=LIVE_WAIT_MS)
    page.evaluate("""() => {
        const history = document.getElementById("history");
        // Only the panel's own redraws: a diff loaded inside it settles too, and that event
        // bubbles up to the panel.
        const count = (event) => {
            if (event.detail && event.detail.target === history) {
                window.__historySwaps = (window.__historySwaps || 0) + 1;
            }
        };
        history.addEventListener("htmx:afterSettle", count);
    }""")

    # Opened, loaded; then the panel is drawn again: the new copy is open and loaded again.
    diff.locator("summary").click()
    history.locator(".history-diff .diff-body .diff").first.wait_for(timeout=LIVE_WAIT_MS)
    before = _redraws(page)
    page.evaluate("document.body.dispatchEvent(new CustomEvent('spark:history-changed'))")
    _wait_redraw(page, before)
    assert history.locator(".history-diff[open]").count() == 1
    history.locator(".history-diff[open] .diff-body .diff").first.wait_for(timeout=LIVE_WAIT_MS)
    assert "b = 2" in history.locator(".history-diff[open] .diff-body").first.inner_text()

    # Closed, a redraw: it stays closed (only what was open is opened again).
    history.locator(".history-diff[open] summary").first.click()
    before = _redraws(page)
    page.evaluate("document.body.dispatchEvent(new CustomEvent('spark:history-changed'))")
    _wait_redraw(page, before)
    assert history.locator(".history-diff[open]").count() == 0

    # Opened right after a redraw's swap, before htmx settles the new copy: the panel's own
    # listener hears its toggle and loads it.
    before = _redraws(page)
    page.evaluate("""() => {
        const history = document.getElementById("history");
        history.addEventListener("htmx:afterSwap", () => {
            const details = history.querySelector("details.history-diff");
            if (details) details.open = true;
        }, { once: true });
        document.body.dispatchEvent(new CustomEvent("spark:history-changed"));
    }""")
    _wait_redraw(page, before)
    history.locator(".history-diff[open] .diff-body .diff").first.wait_for(timeout=LIVE_WAIT_MS)

    # The panel's "show all" / "newest only" buttons (under hx-disable, like all the panel's
    # content) load the panel through the panel's own listener.
    before = _redraws(page)
    page.evaluate("""() => {
        const button = document.querySelector("#history .history-body").appendChild(document.createElement("button"));
        button.dataset.historyLoad = document.getElementById("history").getAttribute("hx-get") + "?all=1";
        button.id = "probe-show-all";
    }""")
    page.locator("#probe-show-all").click()
    _wait_redraw(page, before)
    assert history.locator(".history-turn").count() >= 1 and page.locator("#probe-show-all").count() == 0


def test_a_page_that_catches_up_draws_the_history_of_the_turns_it_missed(
    ide_server: IdeServer, page: Any, chromium: Any,
) -> None:
    """The panel redraws when the server says a turn's record is written (history.changed),
    which is not replayed: a page that was away and catches up on the turns it missed (their
    events replayed) draws the panel once after them."""
    away = {"now": False}
    sockets: list[Any] = []

    def through(route: Any) -> None:  # the page's session socket, passed on to the server
        if away["now"]:
            route.close(code=1001, reason="away")  # the page tries again later
            return
        route.connect_to_server()
        sockets.append(route)

    page.route_web_socket(re.compile(r"/ws/sessions/"), through)
    open_new_workspace(ide_server, page, "history catch-up")
    create_file(page, "a.py")
    history = page.locator("#history")
    connection = page.locator("[data-field=connection]")
    with second_person(ide_server, page, chromium, role="collaborator", username="bob") as person:
        away["now"] = True
        for route in sockets:
            route.close(code=1001, reason="away")
        connection.filter(has_text="live").wait_for(state="detached", timeout=LIVE_WAIT_MS)
        box = person.get_by_label("Prompt")
        box.fill('[rate:2000][say]Meanwhile.\n<write path="c.py">\nc = 3\n</write>\n[/say]')
        box.press("Enter")
        person.locator("#history .history-diff").first.wait_for(timeout=LIVE_WAIT_MS)
        assert history.locator(".history-turn").count() == 0
        away["now"] = False  # back: the page reconnects and catches up
        connection.filter(has_text="live").wait_for(timeout=LIVE_WAIT_MS)
        history.locator(".history-turn .history-diff").first.wait_for(timeout=LIVE_WAIT_MS)
        assert "c.py" in history.locator(".history-turn").first.inner_text()
