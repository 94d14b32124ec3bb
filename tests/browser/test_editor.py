"""The workspace page is the live editor: open from the list, type, reload; the tree; export."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    open_new_workspace,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

TYPED = "greeting = 'hello'\nprint(greeting)\n"  # no indentation: Python mode indents by itself


def test_a_workspace_opened_from_the_list_is_live_and_typing_survives_a_reload(
    ide_server: IdeServer, page: Any
) -> None:
    workspace_url = open_new_workspace(ide_server, page, "browser test")
    page.get_by_role("link", name="Workspaces").click()  # the crumbs lead back to the list
    page.wait_for_url(f"{ide_server.url}/")
    page.get_by_role("link", name="browser test").click()
    page.wait_for_url(workspace_url)
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    assert page.get_by_label("Prompt").is_visible()  # no extra step before the model
    assert page.locator("#start-live, #status-save").count() == 0

    create_file(page, "src/hello.py")
    page.locator(".cm-content").click()
    page.keyboard.type(TYPED)
    page.locator(".cm-content[data-language='python']").wait_for()  # Python mode
    wait_for_server_text(page, "src/hello.py", TYPED)

    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".tree a[data-open='src/hello.py']").click()
    page.locator(".cm-content", has_text="print(greeting)").wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator(".cm-content .cm-line").all_inner_texts()[:2] == ["greeting = 'hello'", "print(greeting)"]


def test_create_rename_and_delete_from_the_tree_follow_into_the_tabs(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "tree test")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type("kept = 1\n")
    wait_for_server_text(page, "a.py", "kept = 1\n")

    page.once("dialog", lambda dialog: dialog.accept("pkg/b.py"))
    page.locator("li.file[data-path='a.py']").hover()
    page.locator("li.file[data-path='a.py'] button[title='Rename']").click()
    page.locator(".tab.active", has_text="b.py").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".cm-content", has_text="kept = 1").wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator(".tree a[data-open='pkg/b.py']").count() == 1
    assert page.locator(".tree a[data-open='a.py']").count() == 0

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("li.file[data-path='pkg/b.py']").hover()
    page.locator("li.file[data-path='pkg/b.py'] button[title='Delete']").click()
    page.locator(".tree a[data-open='pkg/b.py']").wait_for(state="detached")
    page.locator(".tab").first.wait_for(state="detached", timeout=LIVE_WAIT_MS)
    assert server_text(page, "pkg/b.py") is None


def test_the_owner_exports_the_workspace_from_the_live_page(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "export me")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type("x = 1\n")
    wait_for_server_text(page, "a.py", "x = 1\n")
    with page.expect_download() as download:
        page.get_by_role("link", name="export .zip").click()
    assert download.value.suggested_filename == "export_me.zip"


def test_a_file_opens_from_the_address_fragment(ide_server: IdeServer, page: Any) -> None:
    workspace_url = open_new_workspace(ide_server, page, "deep link")
    create_file(page, "docs/notes.md")
    page.locator(".cm-content").click()
    page.keyboard.type("# Notes\n")
    wait_for_server_text(page, "docs/notes.md", "# Notes\n")
    page.goto(f"{ide_server.url}/")  # away, then back by the file's address
    page.goto(f"{workspace_url}#docs/notes.md")
    page.locator(".tab.active", has_text="notes.md").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".cm-content[data-language='markdown']", has_text="# Notes").wait_for(timeout=LIVE_WAIT_MS)


def test_the_address_names_the_file_in_front_and_the_last_switch_wins(ide_server: IdeServer, page: Any) -> None:
    """The fragment is written when the page is idle (not in the task that switches the tab),
    once for several switches: it ends naming the file in front, and a reload opens that."""
    workspace_url = open_new_workspace(ide_server, page, "address")
    create_file(page, "a.py")
    create_file(page, "docs/my notes.md")
    page.wait_for_function("() => location.hash === '#docs/my%20notes.md'", timeout=LIVE_WAIT_MS)
    for name in ("a.py", "my notes.md", "a.py"):  # three switches in a row
        page.locator(".tab", has_text=name).click()
    page.locator(".tab.active", has_text="a.py").wait_for(timeout=LIVE_WAIT_MS)
    page.wait_for_function("() => location.hash === '#a.py'", timeout=LIVE_WAIT_MS)
    page.locator(".tab.active .close").click()  # a.py closes: the other file is in front
    page.wait_for_function("() => location.hash === '#docs/my%20notes.md'", timeout=LIVE_WAIT_MS)
    page.goto(f"{ide_server.url}/")
    page.goto(f"{workspace_url}#docs/my%20notes.md")
    page.locator(".tab.active", has_text="my notes.md").wait_for(timeout=LIVE_WAIT_MS)


def test_enter_indents_by_the_languages_convention(ide_server: IdeServer, page: Any) -> None:
    """Issue 27: the editor indented Python by 2 spaces; each language has its own unit."""
    open_new_workspace(ide_server, page, "indentation")
    for path, typed, indented in (("f.py", "def f():\n", "    "), ("f.js", "function f() {\n", "  ")):
        create_file(page, path)
        page.locator(".cm-content").click()
        page.keyboard.type(typed)  # the line break by the Enter key, as a person types it
        page.keyboard.type("x")
        wait_for_server_text(page, path, f"{typed}{indented}x" + ("\n}" if path.endswith(".js") else ""))
