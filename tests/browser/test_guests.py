"""Join by link in a real browser: someone without an account opens a collaborator invite in a
fresh browser, gives a name, watches the owner's stream live and steers it; the owner sees the
guest among the people, removes them, and a reload tells the guest they no longer have access.

The model is our scripted engine (see test_live_pairing.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import ARTIFACTS, IdeServer, server_text
from tests.browser.test_live_pairing import SLOW_WRITE, STEER, WAIT_MS, _ask, _start_session

pytestmark = pytest.mark.browser


def test_a_guest_joins_by_link_steers_the_owners_turn_and_is_removed(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    _start_session(ide_server, page, "guest pairing")
    page.locator(".invites summary").click()
    link = page.locator("#invite-collaborator").input_value()
    page.locator(".invites summary").click()

    context = chromium.new_context(viewport={"width": 1280, "height": 800})  # not signed in
    try:
        guest = context.new_page()
        errors: list[str] = []
        guest.on("pageerror", lambda exc: errors.append(str(exc)))
        guest.goto(link)
        guest.get_by_role("button", name="Join").click()  # no name yet: the form says so
        guest.locator("#name-error[data-code='name_required']").wait_for()
        guest.get_by_label("Your name").fill("Grace")
        guest.get_by_role("button", name="Join").click()
        guest.wait_for_url("**/sessions/*/")
        guest.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
        assert guest.locator(".role-badge").inner_text() == "collaborator"
        page.locator(".presence .person", has_text="Grace").wait_for(timeout=WAIT_MS)

        _ask(page, SLOW_WRITE)  # the owner asks; the guest sees the stream as it comes
        guest.locator(".turn.running").wait_for(timeout=WAIT_MS)
        guest.locator(".cm-live-ghost").wait_for(timeout=WAIT_MS)
        guest.get_by_role("button", name="Steer").wait_for()
        _ask(guest, STEER)
        for person in (page, guest):
            person.locator(".turn").first.locator(".badge.outcome", has_text="steered").wait_for(timeout=WAIT_MS)
            person.locator(".turn").nth(1).locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
            person.locator(".cm-content", has_text='print("steered")').wait_for(timeout=WAIT_MS)
        assert server_text(page, "a.py") == 'print("steered")\n'
        guest.screenshot(path=str(ARTIFACTS / "guest_steered.png"))

        page.locator(".members summary").click()
        row = page.locator(".member:not(.removed)", has_text="Grace")
        row.locator(".badge.guest").wait_for(timeout=WAIT_MS)
        assert row.locator(".badge", has_text="collaborator").count() == 1
        page.screenshot(path=str(ARTIFACTS / "guest_people.png"))
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Remove").click()
        row.wait_for(state="detached", timeout=WAIT_MS)
        # Listed as removed, with the way back in for when the owner changes their mind.
        page.locator(".member.removed", has_text="Grace").get_by_role("button", name="Let back in").wait_for()
        guest.locator(".toast", has_text="removed").wait_for(timeout=WAIT_MS)
        page.locator(".presence .person", has_text="Grace").wait_for(state="detached", timeout=WAIT_MS)

        guest.reload()
        guest.get_by_role("heading", name="You no longer have access").wait_for(timeout=WAIT_MS)
        assert errors == []
    finally:
        context.close()
