from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import IdeServer

pytestmark = pytest.mark.browser


def test_a_typed_edit_is_saved_and_survives_a_reload(ide_server: IdeServer, page: Any) -> None:
    page.goto(ide_server.login_url())
    page.wait_for_url(f"{ide_server.url}/")  # signed in, the token gone from the address
    page.get_by_label("New workspace name").fill("browser test")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/w/*/")

    page.get_by_label("New file path").fill("src/hello.py")
    page.get_by_title("Create file").click()
    page.locator(".tab.active", has_text="hello.py").wait_for()
    editor = page.locator(".cm-content")
    editor.click()
    page.keyboard.type("def greet(name):\n    return f'hello {name}'\n")
    page.locator("#status-save", has_text="All changes saved").wait_for(timeout=10_000)
    page.locator(".cm-line .tok-keyword, .cm-line span").first.wait_for()  # Python is highlighted

    page.reload()
    page.locator(".tree a[data-open='src/hello.py']").click()
    page.locator(".cm-content", has_text="return f'hello {name}'").wait_for()
    text = page.locator(".cm-content").inner_text()
    assert "def greet(name):" in text
    assert "return f'hello {name}'" in text


def test_rename_and_delete_from_the_tree_follow_into_the_tabs(ide_server: IdeServer, page: Any) -> None:
    page.goto(ide_server.login_url())
    page.get_by_label("New workspace name").fill("tree test")
    page.get_by_role("button", name="Create").click()
    page.get_by_label("New file path").fill("a.py")
    page.get_by_title("Create file").click()
    page.locator(".tab.active", has_text="a.py").wait_for()

    page.once("dialog", lambda dialog: dialog.accept("pkg/b.py"))
    page.locator("li.file[data-path='a.py']").hover()
    page.locator("li.file[data-path='a.py'] button[title='Rename']").click()
    page.locator(".tab.active", has_text="b.py").wait_for()
    assert page.locator(".tree a[data-open='pkg/b.py']").count() == 1

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("li.file[data-path='pkg/b.py']").hover()
    page.locator("li.file[data-path='pkg/b.py'] button[title='Delete']").click()
    page.locator(".tree a[data-open='pkg/b.py']").wait_for(state="detached")
    assert page.locator(".tab").count() == 0
