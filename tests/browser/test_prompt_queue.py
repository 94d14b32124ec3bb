"""The room's prompt queue in two browsers (issue 32): two drivers see the same queue, edit
and reorder it (buttons and Alt+Up), a reload shows it again, "merge" makes one prompt of
two, and the prompts run in the order the list shows."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import IdeServer, second_person
from tests.browser.test_live_pairing import SLOW_WRITE, WAIT_MS, _ask, _start_session

pytestmark = pytest.mark.browser


def said(name: str) -> str:
    return f"[rate:2000][say]Answer {name}.\n[/say]"


def shown(person: Any) -> list[str]:
    """The queue as the page lists it: each item's text, in order."""
    return [str(node.text_content()) for node in person.locator("#queue .queue-text").all()]


def wait_shown(person: Any, expected: list[str]) -> None:
    person.wait_for_function(
        "(expected) => JSON.stringify([...document.querySelectorAll('#queue .queue-text')]"
        ".map((node) => node.textContent)) === JSON.stringify(expected)",
        arg=expected, timeout=WAIT_MS,
    )


def item(person: Any, text: str) -> Any:
    return person.locator("#queue .queue-item", has=person.locator(".queue-text", has_text=text))


def test_two_drivers_edit_and_reorder_the_queue_it_survives_a_reload_and_runs_in_order(
    ide_server: IdeServer, page: Any, chromium: Any,
) -> None:
    _start_session(ide_server, page, "live queue list")
    expect_hint = page.locator(".prompt-keys")
    assert expect_hint.inner_text() == "Enter: ask · Alt+Enter: queue"  # idle: Enter asks
    with second_person(ide_server, page, chromium, role="collaborator", username="cole") as mate:
        _ask(page, SLOW_WRITE)
        page.locator(".turn.running").wait_for(timeout=WAIT_MS)
        assert expect_hint.inner_text() == "Enter: steer · Alt+Enter: queue"  # a turn runs
        for name in ("A", "B", "C"):
            _ask(page, said(name), key="Alt+Enter")
            item(page, f"Answer {name}.").wait_for(timeout=WAIT_MS)
        wait_shown(mate, [said("A"), said("B"), said("C")])  # the other driver sees the same queue
        assert item(mate, "Answer A.").locator(".queue-author").inner_text() == "local"  # who queued it

        # The collaborator edits B in place, then moves C up twice (the button, then Alt+Up).
        item(mate, "Answer B.").get_by_role("button", name="Edit").click()
        draft = mate.locator("#queue .queue-draft")
        draft.fill(said("B2"))
        draft.press("Enter")
        wait_shown(page, [said("A"), said("B2"), said("C")])
        item(mate, "Answer C.").locator("[data-queue=up]").click()
        wait_shown(mate, [said("A"), said("C"), said("B2")])
        item(mate, "Answer C.").focus()
        mate.keyboard.press("Alt+ArrowUp")
        wait_shown(page, [said("C"), said("A"), said("B2")])

        page.reload()  # the queue is the room's: the page is told it again
        page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
        wait_shown(page, [said("C"), said("A"), said("B2")])

        # Merge A and B2: one prompt, at A's place.
        item(page, "Answer A.").locator("[data-queue=select]").check()
        item(page, "Answer B2.").locator("[data-queue=select]").check()
        page.get_by_role("button", name="Merge selected").click()
        merged = f"{said('A')}\n\n{said('B2')}"
        for person in (page, mate):
            person.wait_for_function(
                "() => document.querySelectorAll('#queue .queue-item').length === 2", timeout=WAIT_MS,
            )
        assert shown(mate) == [said("C"), merged]

        page.get_by_role("button", name="Stop").click()  # the running turn ends; the queue runs
        for person in (page, mate):
            person.locator(".turn").nth(2).locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
            person.locator("#queue").wait_for(state="hidden", timeout=WAIT_MS)
        prompts = [node.text_content() for node in page.locator(".turn .turn-prompt").all()]
        assert prompts[1:] == [said("C"), merged]  # the shown order; the merge was one prompt
        assert page.locator(".turn").count() == 3
        assert "Answer B2." in page.locator(".turn").nth(2).inner_text()


def test_swapped_keys_queue_with_enter_and_a_drag_reorders_the_queue(ide_server: IdeServer, page: Any) -> None:
    """The setting swaps Enter and Alt+Enter (the hint says so, a reload keeps it); a queued
    prompt dragged onto another's place moves there."""
    _start_session(ide_server, page, "live queue drag")
    swap = page.get_by_label("Swap Enter and Alt+Enter")
    swap.check()
    assert page.locator(".prompt-keys").inner_text() == "Enter: queue · Alt+Enter: ask"  # idle
    _ask(page, SLOW_WRITE)  # idle: Enter starts a turn either way
    page.locator(".turn.running").wait_for(timeout=WAIT_MS)
    for name in ("A", "B", "C"):
        _ask(page, said(name))  # Enter now queues
        item(page, f"Answer {name}.").wait_for(timeout=WAIT_MS)
    assert page.locator(".turn").count() == 1  # nothing steered

    item(page, "Answer C.").drag_to(item(page, "Answer A."))  # C takes A's place
    wait_shown(page, [said("C"), said("A"), said("B")])
    item(page, "Answer A.").drag_to(item(page, "Answer B."))  # A takes B's place, below it
    wait_shown(page, [said("C"), said("B"), said("A")])

    _ask(page, "[say]Steered.\n[/say]", key="Alt+Enter")  # Alt+Enter now steers
    page.locator(".turn .badge.steer").wait_for(timeout=WAIT_MS)
    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    assert page.get_by_label("Swap Enter and Alt+Enter").is_checked()  # kept in this browser
    assert page.locator(".prompt-keys").inner_text() in {  # idle or a turn running
        "Enter: queue · Alt+Enter: ask", "Enter: queue · Alt+Enter: steer",
    }
