"""The file tree while people type and the model writes: what a person types into the new-file
form is never lost to the tree being drawn again, every file created from it is created, why
one was refused stays shown, and the tree never shows fewer files than the workspace has.

The tree's files are drawn again 300 ms after each file the document gains (and answer each
change asked from the tree). That refresh used to draw the whole tree, form included: created
right after typing in another file (the refresh of that file's own creation landing while the
next path was typed), or while the model wrote files, a new file lost its path and was never
created (seen in CI in test_editor's test_enter_indents, 3 runs of 4)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    front,
    open_new_workspace,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

ROUNDS = 6
KEY_DELAY_MS = 40  # a path typed key by key, as a person types it: it spans a refresh

# Every count of the tree's files as the page drew them, from now on (window.treeCounts).
WATCH_TREE = """() => {
    window.treeCounts = [];
    const count = () => window.treeCounts.push(document.querySelectorAll("#tree li.file").length);
    new MutationObserver(count).observe(document.getElementById("tree"), { childList: true, subtree: true });
}"""


def type_new_file(page: Any, path: str) -> None:
    """Type ``path`` into the new-file form key by key; it must still be there, whole, when the
    person clicks "+" (a tree drawn again meanwhile emptied the form)."""
    field = page.get_by_label("New file path")
    field.click()
    field.press_sequentially(path, delay=KEY_DELAY_MS)
    assert field.input_value() == path, f"the new-file form lost what was typed: {field.input_value()!r}, not {path!r}"
    page.get_by_title("Create file").click()


def tree_paths(page: Any) -> list[str]:
    paths = page.locator("#tree li.file").evaluate_all("(items) => items.map((item) => item.dataset.path)")
    return [str(path) for path in paths]


def tree_counts(page: Any) -> list[int]:
    """The tree's file counts as drawn since WATCH_TREE (none drawn: an empty list)."""
    return [int(count) for count in page.evaluate("() => window.treeCounts")]


def never_fewer(page: Any) -> None:
    """The tree never showed fewer files than it had shown before (nothing was deleted)."""
    counts = tree_counts(page)
    assert counts, "the tree was never drawn again"
    assert [(a, b) for a, b in pairwise(counts) if b < a] == [], f"the tree was drawn with fewer files: {counts}"


def test_a_file_created_right_after_typing_in_another_is_created(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "tree while typing")
    create_file(page, "m0.py")
    page.evaluate(WATCH_TREE)
    for n in range(1, ROUNDS + 1):
        page.locator(".cm-content").click()
        page.keyboard.type(f"v{n} = {n}\n")
        type_new_file(page, f"pkg/m{n}.py")  # right away: this file's own refresh is on its way
        front(page, f"m{n}.py")
        wait_for_server_text(page, f"m{n - 1}.py" if n == 1 else f"pkg/m{n - 1}.py", f"v{n} = {n}\n")
    page.wait_for_timeout(600)  # the last refresh drawn
    assert tree_paths(page) == [f"pkg/m{n}.py" for n in range(1, ROUNDS + 1)] + ["m0.py"]
    assert page.get_by_label("New file path").input_value() == ""  # each create emptied it for the next
    never_fewer(page)


def test_a_refused_path_stays_in_the_form_to_be_corrected(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "tree refusal")
    create_file(page, "a.py")
    type_new_file(page, "a.py")  # right away: a.py's own refresh is on its way
    page.locator("#tree .error", has_text="a.py already exists").wait_for(timeout=LIVE_WAIT_MS)
    page.wait_for_timeout(600)  # that refresh drawn: it draws the files, not away the reason
    assert page.locator("#tree .error", has_text="a.py already exists").is_visible()
    assert page.get_by_label("New file path").input_value() == "a.py"
    page.get_by_label("New file path").fill("b.py")
    page.get_by_title("Create file").click()
    front(page, "b.py")
    assert page.locator("#tree .error").count() == 0
    assert tree_paths(page) == ["a.py", "b.py"]


def test_files_are_created_renamed_and_deleted_from_the_tree_while_the_model_writes_others(
    ide_server: IdeServer, page: Any
) -> None:
    open_new_workspace(ide_server, page, "tree while the model writes")
    create_file(page, "kept.py")
    create_file(page, "gone.py")
    page.evaluate(WATCH_TREE)
    body = "".join(f"row_{n} = {n}\n" for n in range(12))
    writes = "".join(f'<write path="model/w{n}.py">\n{body}</write>\n' for n in range(ROUNDS))
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:400][say]Writing files.\n{writes}Done.\n[/say]")
    box.press("Enter")
    page.locator(".turn.running").wait_for(timeout=LIVE_WAIT_MS)
    for n in range(ROUNDS):
        type_new_file(page, f"mine/p{n}.py")
        page.locator(".tab", has_text=f"p{n}.py").wait_for(timeout=LIVE_WAIT_MS)
    page.once("dialog", lambda dialog: dialog.accept("renamed.py"))
    page.locator("li.file[data-path='kept.py']").hover()
    page.locator("li.file[data-path='kept.py'] button[title='Rename']").click()
    page.locator("#tree li.file[data-path='renamed.py']").wait_for(timeout=LIVE_WAIT_MS)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("li.file[data-path='gone.py']").hover()
    page.locator("li.file[data-path='gone.py'] button[title='Delete']").click()
    page.locator("#tree li.file[data-path='gone.py']").wait_for(state="detached", timeout=LIVE_WAIT_MS)
    page.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)  # the model is done
    page.wait_for_timeout(600)  # the last refresh drawn
    expected = sorted(
        [f"mine/p{n}.py" for n in range(ROUNDS)] + [f"model/w{n}.py" for n in range(ROUNDS)] + ["renamed.py"]
    )
    assert sorted(tree_paths(page)) == expected
    assert server_text(page, "gone.py") is None
    counts = tree_counts(page)
    assert counts and min(counts) >= 2, f"the tree was drawn with fewer files than the workspace had: {counts}"


def test_a_refresh_keeps_the_rows_that_did_not_change_and_a_closed_folder_closed(
    ide_server: IdeServer, page: Any
) -> None:
    """The row under the person's pointer is the same element after the model's files are
    drawn (its hover, its buttons), and a folder the person closed is not opened again."""
    open_new_workspace(ide_server, page, "tree keeps rows")
    create_file(page, "docs/notes.md")
    create_file(page, "kept.py")
    page.locator("#tree li.file[data-path='kept.py']").wait_for(timeout=LIVE_WAIT_MS)
    page.wait_for_timeout(600)  # their own refreshes drawn
    page.locator("#tree li.dir summary", has_text="docs").click()  # the person closes it
    page.locator("#tree li.file[data-path='kept.py']").hover()
    page.evaluate("() => { document.querySelector(\"#tree li.file[data-path='kept.py']\").sparkProbe = true; }")
    page.evaluate(WATCH_TREE)
    writes = "".join(f'<write path="model/w{n}.py">\nx = {n}\n</write>\n' for n in range(3))
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:400][say]Writing files.\n{writes}Done.\n[/say]")
    box.press("Enter")
    for n in range(3):
        page.locator(f"#tree li.file[data-path='model/w{n}.py']").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)
    page.wait_for_timeout(600)  # the last refresh drawn
    assert tree_counts(page), "the tree was never drawn again"
    kept = page.evaluate("() => document.querySelector(\"#tree li.file[data-path='kept.py']\").sparkProbe === true")
    assert kept, "the unchanged row was drawn anew"
    assert page.locator("#tree li.dir details", has_text="docs").evaluate("(details) => details.open") is False
    assert sorted(tree_paths(page)) == ["docs/notes.md", "kept.py", "model/w0.py", "model/w1.py", "model/w2.py"]


def test_a_file_renamed_right_after_typing_in_it_keeps_every_keystroke(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "rename while typing")
    create_file(page, "r0.py")
    create_file(page, "spare.py")
    page.locator(".tab", has_text="r0.py").click()
    page.evaluate(WATCH_TREE)
    typed = ""
    for n in range(ROUNDS):
        page.locator(".cm-content").click()
        page.keyboard.press("Control+End")
        page.keyboard.type(f"r{n} = {n}\n")
        typed += f"r{n} = {n}\n"
        page.once("dialog", lambda dialog, n=n: dialog.accept(f"r{n + 1}.py"))
        page.locator(f"li.file[data-path='r{n}.py']").hover()
        page.locator(f"li.file[data-path='r{n}.py'] button[title='Rename']").click()  # right away
        front(page, f"r{n + 1}.py")
        wait_for_server_text(page, f"r{n + 1}.py", typed)
        assert server_text(page, f"r{n}.py") is None
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("last = True\n")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("li.file[data-path='spare.py']").hover()
    page.locator("li.file[data-path='spare.py'] button[title='Delete']").click()  # right away
    page.locator("#tree li.file[data-path='spare.py']").wait_for(state="detached", timeout=LIVE_WAIT_MS)
    wait_for_server_text(page, f"r{ROUNDS}.py", typed + "last = True\n")
    assert tree_paths(page) == [f"r{ROUNDS}.py"]
    counts = tree_counts(page)
    assert counts and min(counts) >= 1, f"the tree was drawn empty: {counts}"
