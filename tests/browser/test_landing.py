"""Where people land, and what every panel answers, in real browsers: the owner's own tabs come
back after a reload (and with no file in the address); a collaborator and a guest viewer who
join land on the file the owner has open, not on an empty editor, and on it again after a
reload; no panel any of them can open answers 4xx/5xx; presenter mode lines the numbers up
with their lines as it is entered and does not make anyone follow anybody. (The classroom's
teacher and student: test_classroom.py.)"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    failures,
    front,
    live,
    open_every_panel,
    open_new_workspace,
    second_person,
    tab_names,
)

pytestmark = pytest.mark.browser

LINES = 12  # a file shorter than the editor at either type size: its content keeps the editor's height


def check_alignment(page: Any) -> list[tuple[str, float, float]]:
    """Each visible line number's box and its line's box: (number, gutter top, line top) where
    they differ by more than 2 px, measured in the frame after the one the page is in."""
    return page.evaluate(  # type: ignore[no-any-return]
        """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
            const lines = [...document.querySelectorAll(".cm-content .cm-line")];
            const numbers = [...document.querySelectorAll(".cm-lineNumbers .cm-gutterElement")]
                .filter((node) => node.style.visibility !== "hidden" && /^\\d+$/.test(node.textContent));
            const off = [];
            for (const number of numbers) {
                const line = lines[Number(number.textContent) - 1];
                const a = number.getBoundingClientRect().top, b = line ? line.getBoundingClientRect().top : NaN;
                if (!(Math.abs(a - b) <= 2)) off.push([number.textContent, a, b]);
            }
            done(numbers.length ? off : [["no line numbers", 0, 0]]);
        })))"""
    )


def test_people_land_on_the_rooms_file_and_their_own_tabs_come_back(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    owner_bad = failures(page)
    url = open_new_workspace(ide_server, page, "landing")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.insert_text("".join(f"line_{n} = {n}\n" for n in range(1, LINES)))
    # The model writes b.py: the file changed last. The owner then works in a.py.
    box = page.get_by_label("Prompt")
    box.fill('[rate:2000][say]Here.\n<write path="b.py">\nb = 2\n</write>\n[/say]')
    box.press("Enter")
    page.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".tab", has_text="a.py").click()
    page.locator(".cm-line", has_text="line_3").click()
    front(page, "a.py")

    # Reload, and open the workspace again without a file in the address: the owner's own
    # tabs, with a.py in front.
    page.reload()
    live(page)
    front(page, "a.py")
    page.goto(url)
    live(page)
    front(page, "a.py")
    assert tab_names(page) == ["a.py", "b.py"]

    with second_person(ide_server, page, chromium, role="collaborator", username="bob") as mate, \
            second_person(ide_server, page, chromium, role="viewer", username="vic") as viewer, \
            second_person(ide_server, page, chromium, role="viewer", guest_name="Grace") as guest:
        # Each lands on the file the owner has open (b.py changed last, a.py is where the owner
        # is), and only there: the page showed b.py a moment, it is not left as their tab.
        for person in (mate, viewer, guest):
            front(person, "a.py")
            assert tab_names(person) == ["a.py"]
        # A reload: their own tab again, and every panel they can open answers.
        people = {"owner": page, "collaborator": mate, "viewer": viewer, "guest viewer": guest}
        bad = {"owner": owner_bad}
        for role, person in people.items():
            if role != "owner":
                bad[role] = failures(person)
                person.reload()
                live(person)
                front(person, "a.py")
            open_every_panel(person)
        assert {role: found for role, found in bad.items() if found} == {}

        # The collaborator goes to b.py; the owner presents: the numbers line up at once, and
        # the owner follows nobody (before, entering it followed the collaborator to b.py).
        page.locator(".tab", has_text="a.py").click()  # the owner's own place again (Follow was tried)
        mate.locator(".tree a[data-open='b.py']").click()
        mate.locator(".cm-line", has_text="b = 2").click()
        page.locator(".presence .person[data-files='b.py']", has_text="bob").wait_for(timeout=LIVE_WAIT_MS)
        assert check_alignment(page) == []
        page.locator("#present").click()
        page.locator("body.presenting").wait_for()
        assert check_alignment(page) == []
        size = page.locator(".cm-scroller").evaluate("(node) => parseFloat(getComputedStyle(node).fontSize)")
        assert size >= 20, size
        page.wait_for_timeout(300)  # time for a follow to have moved the view, had there been one
        assert page.locator("#follow").get_attribute("aria-pressed") == "false"
        assert page.locator(".tab.active").get_attribute("data-path") == "a.py"
        assert "follow=1" not in page.url
        page.locator("#present").click()
        page.locator("body:not(.presenting)").wait_for()
        assert check_alignment(page) == []


def test_who_comes_while_a_collaborator_is_still_landing_takes_the_owners_file(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    """A collaborator's page shows the file changed last until it hears where the owner is: it
    tells the others it is only landing there, so a viewer who comes meanwhile waits for the
    owner's file rather than taking the collaborator's. The owner's awareness is held back on
    its way to the server (a slow link) until the viewer has heard the collaborator's."""
    held: list[bytes] = []
    holding = [False]
    to_server: list[Any] = []

    def route(socket_: Any) -> None:
        server = socket_.connect_to_server()
        to_server.append(server)

        def from_page(message: str | bytes) -> None:
            if holding[0] and isinstance(message, bytes) and message[:1] == b"\x01":  # awareness
                held.append(message)
            else:
                server.send(message)

        socket_.on_message(from_page)

    page.route_web_socket(lambda url: "/ws/" in url, route)
    open_new_workspace(ide_server, page, "landing-late")
    # a.py stays empty: typed in just before the prompt, its row could follow the document in
    # the same refresh of the rows (200 ms) as the model's b.py, and a refresh stamps the rows
    # it changes in the document's order (a.py could come out as the file changed last).
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    box = page.get_by_label("Prompt")
    box.fill('[rate:2000][say]Here.\n<write path="b.py">\nb = 2\n</write>\n[/say]')
    box.press("Enter")
    page.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".tab", has_text="a.py").click()
    front(page, "a.py")
    # The file rows follow the document a moment later: b.py is the file changed last once
    # the session page says so (what a newcomer's page lands on). Polled from here: Playwright's
    # wait_for_function takes a returned promise as a truthy answer at once.
    fresh_page = """async () => (await (await fetch(location.pathname, { signal: AbortSignal.timeout(5000) })).text())
        .includes('data-last-file="b.py"')"""
    deadline = time.monotonic() + LIVE_WAIT_MS / 1000
    while not page.evaluate(fresh_page):
        assert time.monotonic() < deadline, "the session page never named b.py as the file changed last"
        page.wait_for_timeout(100)

    holding[0] = True
    with second_person(ide_server, page, chromium, role="collaborator", username="bob") as mate:
        mate.locator(".tab.active").wait_for(timeout=LIVE_WAIT_MS)
        assert mate.locator(".tab.active").get_attribute("data-path") == "b.py", (
            "the collaborator landed on the file changed last (nobody's place heard of yet)",
            tab_names(mate), mate.locator("#live").get_attribute("data-last-file"),
        )
        with second_person(ide_server, page, chromium, role="viewer", username="vic") as viewer:
            viewer.locator(".presence .person[data-files='b.py']", has_text="bob").wait_for(timeout=LIVE_WAIT_MS)
            holding[0] = False
            for message in held:
                to_server[-1].send(message)
            for person in (mate, viewer):
                front(person, "a.py")
                assert tab_names(person) == ["a.py"]
