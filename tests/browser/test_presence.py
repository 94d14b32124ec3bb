"""Presence, cursors and presenter mode in real browsers: an owner drives, a viewer watches
through the presenter link. The model is the scripted engine (``[say]...[/say]`` at ``[rate:N]``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    ARTIFACTS,
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

WAIT_MS = 20_000
GREY = "rgb(134, 142, 150)"  # the dot of someone the server sent no colour for


def _write(path: str, body: str, rate: int = 400) -> str:
    return f'[rate:{rate}][say]Writing {path}.\n<write path="{path}">\n{body}</write>\n[/say]'


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def _dot_colour(page: Any, name: str) -> str:
    dot = page.locator(".presence .person", has_text=name).locator(".person-dot")
    return str(dot.evaluate("(node) => getComputedStyle(node).backgroundColor"))


def _active(page: Any, name: str) -> None:
    page.locator(".tab.active", has_text=name).wait_for(timeout=WAIT_MS)


def _finished(page: Any, count: int) -> None:
    page.locator(".turn .badge.outcome").nth(count - 1).wait_for(timeout=WAIT_MS)


def test_two_people_see_each_other_and_the_viewer_follows_the_driver(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    open_new_workspace(ide_server, page, "presence")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type("seed = 1\n")
    wait_for_server_text(page, "a.py", "seed = 1\n")
    presenter_link = str(page.eval_on_selector("#present", "(link) => link.href"))
    assert presenter_link.endswith("?present=1&follow=1")  # whoever opens it follows

    with second_person(ide_server, page, chromium, role="viewer", username="vera") as viewer:
        viewer.goto(presenter_link)
        viewer.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)

        # Each sees the other, in a colour of their own that both pages agree on.
        for person in (page, viewer):
            for name in ("local", "vera"):
                person.locator(".presence .person", has_text=name).wait_for(timeout=WAIT_MS)
        owner_colour, viewer_colour = _dot_colour(page, "local"), _dot_colour(page, "vera")
        assert GREY not in (owner_colour, viewer_colour) and owner_colour != viewer_colour
        assert _dot_colour(viewer, "local") == owner_colour
        assert viewer.locator(".presence .person.me").inner_text().startswith("vera")

        # Presenter mode: large type, and following: the driver's file opens with their caret,
        # labelled with their name in their colour.
        assert viewer.locator("body.presenting").count() == 1
        size = viewer.locator(".cm-scroller").evaluate("(node) => parseFloat(getComputedStyle(node).fontSize)")
        assert size >= 20, size
        assert page.locator(".cm-scroller").evaluate("(node) => parseFloat(getComputedStyle(node).fontSize)") < 20
        _active(viewer, "a.py")
        caret = viewer.locator(".cm-ySelectionCaret", has=viewer.locator(".cm-ySelectionInfo", has_text="local"))
        caret.wait_for(timeout=WAIT_MS)
        assert caret.evaluate("(node) => getComputedStyle(node).backgroundColor") == owner_colour
        viewer.locator(".presence .person[data-files='a.py']", has_text="local").wait_for(timeout=WAIT_MS)
        assert viewer.get_by_role("button", name="Stop following").is_visible()

        # The model writes another file: the viewer goes there; the driver goes back to a.py,
        # and so does the viewer.
        _ask(page, _write("b.py", "b = 2\n"))
        _active(viewer, "b.py")
        _finished(page, 1)
        page.locator(".tab", has_text="a.py").click()
        page.locator(".cm-line", has_text="seed").click()  # the caret moves: its place is news
        _active(viewer, "a.py")

        # Picking a file by hand stops following; "Follow again" goes where the action is.
        viewer.locator(".tab", has_text="b.py").click()
        again = viewer.get_by_role("button", name="Follow again")
        again.wait_for(timeout=WAIT_MS)
        _ask(page, _write("c.py", "c = 3\n"))
        _finished(viewer, 2)
        viewer.locator(".tab", has_text="c.py").wait_for(timeout=WAIT_MS)  # opened beside, not shown
        assert viewer.locator(".tab.active").inner_text().startswith("b.py")
        again.click()
        _active(viewer, "c.py")

        # Who stopped a turn is in everyone's transcript.
        _ask(page, _write("d.py", "".join(f"d_{i} = {i}\n" for i in range(200)), rate=40))
        viewer.locator(".turn.running").wait_for(timeout=WAIT_MS)
        page.get_by_label("Prompt").press("Escape")
        stopped = viewer.locator(".turn").nth(2).locator(".turn-foot .reason")
        stopped.wait_for(timeout=WAIT_MS)
        assert stopped.inner_text() == "stopped by local"
        ARTIFACTS.mkdir(exist_ok=True)
        viewer.screenshot(path=str(ARTIFACTS / "presence_viewer.png"))
