"""The Content-Security-Policy in Chromium (issue 16): the live session page (the editor, its
injected styles and lint marks, a collaborator's caret in their colour), the replay, the
workspace list and the classroom pages run under the policy with no violation reported and
no CSP message on the console; a script or handler written into a page does not run, nor does
an htmx ``hx-on`` attribute. One browser, one walk through the pages, to keep CI time low."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

# Runs in every document before the page's own scripts (an init script is the browser's, not
# the page's: the policy does not apply to it). Each violation: directive and what was refused.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__csp.push(`${event.effectiveDirective}: ${event.blockedURI || event.sample || "inline"}`);
});
"""


def violations(page: Any) -> list[str]:
    return list(page.evaluate("window.__csp || []"))


def assert_clean(page: Any, console: list[str], where: str) -> None:
    assert violations(page) == [], f"CSP violations on {where}: {violations(page)}"
    assert console == [], f"CSP messages on the console on {where}: {console}"


def test_pages_run_under_the_policy_and_injected_code_does_not(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    page.context.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)

    # The live page: the editor's styles carry the nonce; a collaborator's caret is coloured
    # through the CSSOM, not a style attribute.
    url = open_new_workspace(ide_server, page, "policed", username="tess")  # a teacher below
    policy = page.evaluate("async (url) => (await fetch(url)).headers.get('content-security-policy')", url)
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    nonce = page.locator("meta[name=csp-nonce]").get_attribute("content")
    assert nonce and f"'nonce-{nonce}'" not in policy  # a fresh nonce for every response
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type("import os\nvalue = 1\n")
    wait_for_server_text(page, "a.py", "import os\nvalue = 1\n")
    assert page.evaluate("[...document.querySelectorAll('style')].every((s) => s.nonce)")
    with second_person(ide_server, page, chromium, role="collaborator", username="bob") as bob:
        bob.locator(".tree a[data-open='a.py']").click()
        bob.locator(".cm-content").click()
        bob.keyboard.press("Control+End")
        bob.keyboard.type("other = 2\n")
        caret = page.locator(".cm-ySelectionCaret", has=page.locator(".cm-ySelectionInfo", has_text="bob"))
        caret.wait_for(timeout=LIVE_WAIT_MS)
        colour = caret.evaluate("(node) => getComputedStyle(node).backgroundColor")
        assert colour not in ("", "rgba(0, 0, 0, 0)")
        assert violations(bob) == []
    assert_clean(page, console, "the live page")

    # Code written into the page does not run: an inline script, an inline handler, and an
    # htmx hx-on attribute (htmx evaluates no attribute: allowEval is off).
    ran = page.evaluate("""async () => {
        window.__ran = [];
        const script = document.createElement("script");
        script.textContent = "window.__ran.push('script')";
        document.body.append(script);
        document.body.insertAdjacentHTML("beforeend", `<img src="data:," onerror="window.__ran.push('handler')">`);
        const button = document.createElement("button");
        button.setAttribute("hx-on:click", "window.__ran.push('hx-on')");
        document.body.append(button);
        window.htmx.process(button);
        button.click();
        await new Promise((resolve) => setTimeout(resolve, 200));
        return window.__ran;
    }""")
    assert ran == []
    refused = violations(page)
    assert any(v.startswith("script-src-elem") for v in refused), refused
    assert any(v.startswith("script-src-attr") for v in refused), refused
    page.reload()  # a clean page for the next checks
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    console.clear()

    # The replay of this session.
    session = page.locator("#live").get_attribute("data-session")
    page.goto(f"{ide_server.url}/sessions/{session}/replay")
    page.locator("#replay[data-ready=true]").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-scrubber").evaluate(  # to the end: the file as typed, in CodeMirror
        "(range) => { range.value = range.max; range.dispatchEvent(new Event('input')); }"
    )
    page.locator("#replay-editor .cm-content", has_text="other = 2").wait_for(timeout=LIVE_WAIT_MS)
    assert_clean(page, console, "the replay")

    # The workspace list, and the classroom: the course list, a new course's page (htmx).
    page.goto(f"{ide_server.url}/")
    page.get_by_label("New workspace name").wait_for()
    assert_clean(page, console, "the workspace list")
    ide_server.manage("spark_teacher", "tess")
    page.goto(f"{ide_server.url}/classroom/")
    page.get_by_label("Name").fill("Policed class")
    page.get_by_label("Template: one of your workspaces").select_option(label="policed")
    page.get_by_role("button", name="Create course").click()
    page.wait_for_url("**/classroom/*/")
    page.locator("#students", has_text="No student has joined yet").wait_for()
    assert_clean(page, console, "the course page")
    page.goto(f"{ide_server.url}/join/")
    page.get_by_label("Course code").wait_for()
    assert_clean(page, console, "the join page")
