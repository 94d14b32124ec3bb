"""The test-rounds switch under the editor (issue 30), as a person uses it: it shows the
server's default until the workspace makes a choice; unticking it saves the workspace's choice
(the stored value, read back through the API), a reload shows it, and "use the server's
default" clears it; another page open on the workspace follows a change without a reload
(``workspace.settings``). Also, under Node, the words the switch says of a choice."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import ROOT, IdeServer, open_new_workspace
from tests.support.node import run_node

WAIT_MS = 20_000


def stored_choice(page: Any) -> Any:
    """The workspace's ``auto_test`` as the server has it (GET /api/workspaces/<id>)."""
    return page.evaluate(
        """async () => {
            const workspace = document.getElementById("live").dataset.workspace;
            const response = await fetch(`/api/workspaces/${workspace}`);
            return (await response.json()).auto_test;
        }"""
    )


@pytest.mark.browser
def test_the_switch_saves_the_workspaces_choice_and_clears_it(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "test rounds")
    switch = page.locator("#auto-test")
    box = switch.get_by_label("Test rounds: run the tests after the model's changes")
    assert box.is_checked() and box.is_enabled()  # the server's default (SPARK_AUTO_TEST=on)
    assert switch.locator("[data-auto-test=source]").inner_text() == "(the server's default: on)"
    assert switch.locator("[data-auto-test=reset]").is_hidden()
    assert stored_choice(page) is None

    box.uncheck()
    switch.locator("[data-auto-test=status]", has_text="saved").wait_for(timeout=WAIT_MS)
    assert stored_choice(page) is False
    assert switch.locator("[data-auto-test=source]").inner_text() == "(this workspace's choice)"
    assert not box.is_checked()

    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    box = page.locator("#auto-test").get_by_label("Test rounds: run the tests after the model's changes")
    assert not box.is_checked()  # what the page is drawn with: the stored choice
    page.locator("#auto-test [data-auto-test=reset]").click()
    page.locator("#auto-test [data-auto-test=status]", has_text="saved").wait_for(timeout=WAIT_MS)
    assert stored_choice(page) is None
    assert box.is_checked()  # back to the server's default
    assert page.locator("#auto-test [data-auto-test=reset]").is_hidden()


@pytest.mark.browser
def test_another_page_on_the_workspace_follows_the_switch(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "test rounds, two pages")
    other = page.context.new_page()
    other.goto(page.url)
    other.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    label = "Test rounds: run the tests after the model's changes"
    there = other.locator("#auto-test").get_by_label(label)
    assert there.is_checked()

    page.locator("#auto-test").get_by_label(label).uncheck()  # this page saves the choice...
    other.locator("#auto-test [data-auto-test=status]", has_text="changed by").wait_for(timeout=WAIT_MS)
    assert not there.is_checked()  # ...and the other page's switch follows, without a reload
    assert other.locator("#auto-test [data-auto-test=source]").inner_text() == "(this workspace's choice)"
    assert other.locator("#auto-test [data-auto-test=reset]").is_visible()

    other.locator("#auto-test [data-auto-test=reset]").click()  # and back, from the other page
    page.locator("#auto-test[data-choice=null]").wait_for(timeout=WAIT_MS)
    assert page.locator("#auto-test").get_by_label(label).is_checked()
    other.close()


def test_the_switch_says_whose_choice_it_shows() -> None:
    script = """
        const { choiceSource, parseChoice } = await import(SWITCH);
        console.log(JSON.stringify([
            ["true", "false", "null", ""].map(parseChoice),
            choiceSource(null, true), choiceSource(null, false), choiceSource(false, true),
        ]));
    """
    assert run_node(script, SWITCH=(ROOT / "static/src/live/auto_test.js").as_uri()) == [
        [True, False, None, None],
        "(the server's default: on)", "(the server's default: off)", "(this workspace's choice)",
    ]
