"""@-mentions and the context strip in a browser (issue 32 items 2, 3, 5): typing `@` lists
the workspace's files (and a Python file's definitions after `:`), the keyboard and the mouse
pick; the strip under the box shows what the next request will carry, and the model server
(in this process, every request logged) receives exactly that: the mentions first, the same
files shown, the same left out for the budget; a chip removed is left out; a mention of a
file deleted meanwhile is struck out and skipped with a note, in the request and the
transcript."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import ROOT, IdeServer, logged_model_ide, open_new_workspace
from tests.browser.test_live_pairing import WAIT_MS, _ask
from tests.support.node import run_node

pytestmark = pytest.mark.browser

BIG = "".join(f"A line of notes, number {n}.\n" for n in range(300))  # over the budget left for it
SETUP = (
    "[rate:4000][say]Files.\n"
    '<write path="util.py">\nLIMIT = 3\n</write>\n'
    '<write path="lib.py">\ndef helper():\n    return 1\n\n\ndef other():\n    return 2\n</write>\n'
    '<write path="gone.py">\nGONE = 1\n</write>\n'
    '<write path="notes.md">\nA note.\n</write>\n'
    f'<write path="zz_big.md">\n{BIG}</write>\nDone.\n[/say]'
)


@pytest.fixture(scope="module")
def context_ide(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IdeServer, Any]]:
    # A small context budget: the big file does not fit beside the others.
    with logged_model_ide(ide_server, tmp_path_factory.mktemp("ide-context"), {}, SPARK_CONTEXT_TOKENS="2500") as ide:
        yield ide


def strip_chips(page: Any) -> dict[str, list[str]]:
    """The strip's chips by kind: each chip's file (or its words when it names none)."""
    return dict(page.evaluate("""() => {
        const kinds = {};
        for (const chip of document.querySelectorAll("#context-strip .context-chip")) {
            const kind = ["active", "symbol", "mentioned", "other", "missing", "left-out", "excluded", "more"]
                .find((name) => chip.classList.contains(name));
            (kinds[kind] = kinds[kind] || []).push(chip.dataset.path || chip.textContent);
        }
        return kinds;
    }"""))


def last_prompt(log: Any) -> str:
    """The text of the last user message of the last request the model server received."""
    item = [entry for entry in log.entries[-1].items if entry.get("role") == "user"][-1]
    content = item["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_mentions_complete_go_first_and_the_strip_is_what_the_model_gets(
    context_ide: tuple[IdeServer, Any], page: Any,
) -> None:
    server, log = context_ide
    open_new_workspace(server, page, "mentions and context")
    _ask(page, SETUP)
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)

    box = page.get_by_label("Prompt")
    box.click()
    menu = page.locator("#mention-menu")
    box.press_sequentially("@")  # every file; Down and Up move, Esc closes
    menu.locator(".mention-item").nth(4).wait_for(timeout=WAIT_MS)
    selected = menu.locator(".mention-item[aria-selected=true] .mention-label")
    first = selected.inner_text()
    box.press("ArrowDown")
    assert selected.inner_text() == menu.locator(".mention-label").nth(1).inner_text() != first
    box.press("ArrowUp")
    assert selected.inner_text() == first
    box.press("Escape")
    assert menu.is_hidden() and box.input_value() == "@"
    box.press("Backspace")
    box.press_sequentially("tidy @uti")
    menu.locator(".mention-item").first.wait_for(timeout=WAIT_MS)
    assert menu.locator(".mention-label").first.inner_text() == "util.py"
    box.press("Enter")  # picks; nothing is sent
    assert box.input_value() == "tidy @util.py " and menu.is_hidden()
    box.press_sequentially("and @lib.py:h")  # after ':' the file's definitions, read by the server
    menu.locator("[data-mention='lib.py:helper']").wait_for(timeout=WAIT_MS)
    assert menu.locator(".mention-label").all_inner_texts() == ["lib.py:helper"]
    box.press("Tab")
    box.press_sequentially("and @go")
    menu.locator("[data-mention='gone.py']").click()  # the mouse picks too
    assert box.input_value() == "tidy @util.py and @lib.py:helper and @gone.py "

    # The strip: the mentions, the rest packed, the big file left out for the budget.
    page.locator("#context-strip .context-chip.mentioned[data-path='gone.py']").wait_for(timeout=WAIT_MS)
    chips = strip_chips(page)
    assert chips["mentioned"] == ["util.py", "gone.py"] and chips["symbol"] == ["lib.py"]
    assert chips["left-out"] == ["zz_big.md"]
    page.locator("#context-strip .context-chip[data-path='notes.md'] .context-remove").click()  # taken out
    page.locator("#context-strip .context-chip.excluded[data-path='notes.md']").wait_for(timeout=WAIT_MS)

    # gone.py is deleted meanwhile: its chip is struck out.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("li.file[data-path='gone.py']").hover()
    page.locator("li.file[data-path='gone.py'] button[title='Delete']").click()
    page.locator("#context-strip .context-chip.missing", has_text="@gone.py").wait_for(timeout=WAIT_MS)
    chips = strip_chips(page)
    meter = page.locator("#context-strip .context-tokens").inner_text()
    assert re.fullmatch(r"≈ [\d,]+ of 2,500 tokens", meter), meter

    asked = len(log.entries)
    box.press("Enter")
    page.locator(".turn").nth(1).locator(".badge.outcome").wait_for(timeout=WAIT_MS)
    assert len(log.entries) == asked + 1
    sent = last_prompt(log)
    shown = re.findall(r'^<file path="([^"]+)"( lines="[^"]+" symbol="[^"]+" excerpt="true")?', sent, re.MULTILINE)
    # The request carries what the strip showed: mentions first (the symbol as its lines), the
    # rest packed, the same file left out, notes.md nowhere, gone.py skipped with a note.
    assert shown[:2] == [("util.py", ""), ("lib.py", ' lines="1-2" symbol="helper" excerpt="true"')]
    whole = {path for path, excerpt in shown if not excerpt}
    assert whole == {*chips.get("active", []), *chips["mentioned"], *chips.get("other", [])}
    assert "notes.md" not in whole and chips["excluded"] == ["notes.md"]
    assert "Files not shown (context budget): zz_big.md\n" in sent and chips["left-out"] == ["zz_big.md"]
    assert "Mentioned but skipped: @gone.py (no such file)\n" in sent

    # The transcript: the mentions as chips (gone.py struck out, a note), what went, on demand.
    turn = page.locator(".turn").nth(1)
    assert turn.locator(".mention-chip").all_inner_texts() == ["@util.py", "@lib.py:helper", "@gone.py"]
    assert turn.locator(".mention-chip.struck").inner_text() == "@gone.py"
    assert turn.locator(".context-skipped").inner_text() == "@gone.py: no such file — skipped"
    turn.locator(".turn-context summary").click()
    turn.locator(".context-row").first.wait_for(timeout=WAIT_MS)  # drawn on the box's toggle, a moment later
    rows = turn.locator(".context-row").all_inner_texts()
    assert any(row.startswith("symbol") and "lib.py:helper · lines 1\u20132" in row for row in rows), rows
    assert any(row.startswith("excluded") and "notes.md" in row for row in rows), rows
    assert any(row.startswith("left out") and "zz_big.md" in row for row in rows), rows


MENTIONS_JS = """
const { mentionsIn, matchPaths } = await import(MODULE);
console.log(JSON.stringify({
  mentions: TEXTS.map((text) => mentionsIn(text)),
  matches: QUERIES.map((query) => matchPaths(PATHS, query)),
}));
"""


def test_which_words_are_mentions_and_which_paths_a_query_lists() -> None:
    texts = [
        "tidy @util.py and @lib.py:helper, then @util.py again.",
        "@property is a decorator; mail me at a@b.com; (@src/app.js) and @docs/",
        "@notes.md? @gone.py!",
    ]
    paths = ["src/util.py", "util.py", "lib/utilities.md", "README.md", "tests/test_util.py"]
    result = run_node(
        MENTIONS_JS, MODULE=(ROOT / "static/src/live/mentions.js").as_uri(), TEXTS=texts, PATHS=paths,
        QUERIES=["util", "READ", "zzz"],
    )
    assert result["mentions"] == [
        ["util.py", "lib.py:helper"], ["src/app.js", "docs/"], ["notes.md", "gone.py"],
    ]
    # A file name that starts with the query first, then the shorter path; any case.
    assert result["matches"] == [
        ["util.py", "src/util.py", "lib/utilities.md", "tests/test_util.py"], ["README.md"], [],
    ]
