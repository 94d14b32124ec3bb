"""Whatever the model writes, the page keeps up: a line longer than the ghost the server sends
(its end, after an ellipsis), a paragraph of 200,000 characters on one line (the transcript
keeps a bounded part of it on the page, the rest a click away, and the file written after it
is whole in the editor), and a long session (older turns fold to one line, and open again).

The model is our scripted engine: ``[say]...[/say]`` in a prompt, or, for answers longer
than a prompt may be, a named script of a model server started here (``--script-file``).
Behaviour only: nothing here is timed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    ROOT,
    IdeServer,
    create_file,
    open_new_workspace,
    scripted_ide,
    server_text,
)

pytestmark = pytest.mark.browser

WORDS = ("the", "model", "writes", "code", "while", "you", "steer", "it", "and", "each", "token", "lands")
GHOST_CHARS = 256  # what the server sends of the line being written (editing.applier)
PART_MAX_CHARS = 4096  # the longest prose part (transcript_prose.js)


def _paragraph(chars: int, seed: int) -> str:
    """Words in a seeded order (a cycle would be stopped as a loop), on one line."""
    rng = random.Random(seed)
    words: list[str] = []
    size = -1
    while size < chars:
        words.append(rng.choice(WORDS))
        size += len(words[-1]) + 1
    return " ".join(words)[:chars].rstrip()


def _file(lines: int) -> str:
    return "".join(f"def step_{i}(value):\n    return value * {i} + {i % 7}\n\n" for i in range(lines // 3))


LONG_PROSE = _paragraph(200_000, seed=7)
WRITTEN = _file(300)
SCRIPTS = {"long-prose": f'{LONG_PROSE}\n<write path="after.py">\n{WRITTEN}</write>\nDone.\n'}

# The editor's view, found from its content DOM (a statement that sets `view`).
_FIND_VIEW = """
    const content = document.querySelector("#editor .cm-content");
    const tile = content && (content.cmTile || content.cmView);
    const view = tile && ((tile.root && tile.root.view) || (tile.rootView && tile.rootView.view));"""
# The editor's document, from its view (CodeMirror draws only part of a long line).
_EDITOR_DOC = f"""() => {{{_FIND_VIEW}
    return view ? view.state.doc.toString() : null;
}}"""
# The ghost's text (the editor does not watch it: it is in a shadow root of its own), or null.
_GHOST_TEXT = """() => {
    const ghost = document.querySelector(".cm-live-ghost .cm-live-ghost-text");
    if (ghost === null) return null;
    return [...ghost.childNodes].map((node) => (node.shadowRoot || node).textContent).join("");
}"""
# Every node under the transcript (elements and text), as the browser benchmark counts them.
_TRANSCRIPT_NODES = """() => {
    const walker = document.createTreeWalker(document.getElementById("transcript"), NodeFilter.SHOW_ALL);
    let count = 0;
    while (walker.nextNode()) count += 1;
    return count;
}"""
# The text of a turn's prose as shown: the text nodes of its parts, in order (not chips).
_PROSE = """(turn) => [...turn.querySelectorAll(".prose > .prose-part")].flatMap((part) => [...part.childNodes])
    .filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.data).join("")"""


@pytest.fixture(scope="module")
def scripted_server(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    """An IDE whose model server knows SCRIPTS (``[script:NAME]`` plays one)."""
    with scripted_ide(ide_server, tmp_path_factory.mktemp("ide-long-lines"), SCRIPTS) as server:
        yield server


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def _wait_editor_doc(page: Any, text: str) -> None:
    page.wait_for_function(f"() => ({_EDITOR_DOC})() === {json.dumps(text)}", timeout=LIVE_WAIT_MS)


def test_a_line_longer_than_the_ghost_shows_its_end_after_an_ellipsis(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "long ghost")
    create_file(page, "seed.py")
    digits = "".join(f"{(i * 7919) % 65536:04x}" for i in range(225))  # 900 characters, one word
    line = f'BLOB = "{digits}"'
    _ask(page, f'[rate:60][say]A long literal.\n<write path="blob.py">\n{line}\nSIZE = len(BLOB)\n</write>\nDone.\n'
               "[/say]")
    page.locator(".tab.active", has_text="blob.py").wait_for(timeout=LIVE_WAIT_MS)
    # Past GHOST_CHARS characters, the ghost is the line's end after an ellipsis.
    page.wait_for_function(f"() => {{ const text = ({_GHOST_TEXT})(); return text !== null && text.startsWith('…'); }}",
                           timeout=LIVE_WAIT_MS)
    shown = page.evaluate(
        f"""() => {{
            const ghost = document.querySelector(".cm-live-ghost");
            const scroller = document.querySelector("#editor .cm-scroller").getBoundingClientRect();
            const caret = ghost.querySelector(".cm-live-caret").getBoundingClientRect();
            const box = document.querySelector("#editor .cm-scroller");
            return {{ text: ({_GHOST_TEXT})(), caretLeft: caret.left, caretRight: caret.right,
                     left: scroller.left, right: scroller.right,
                     sideways: box.scrollWidth - box.clientWidth }};
        }}"""
    )
    tail = shown["text"][1:]
    assert len(tail) == GHOST_CHARS and tail in line, shown["text"]
    assert line.index(tail) > 0  # the end of what was written so far, not its start
    # The ghost does not widen the editor, and its end (the caret) is in view.
    assert shown["sideways"] <= 1, shown
    assert shown["left"] <= shown["caretLeft"] and shown["caretRight"] <= shown["right"] + 1, shown
    page.screenshot(path=str(ROOT / "test-artifacts" / "long_ghost.png"))

    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    _wait_editor_doc(page, f"{line}\nSIZE = len(BLOB)\n")  # the whole line, once it is written
    assert page.locator(".cm-live-ghost").count() == 0
    assert server_text(page, "blob.py") == f"{line}\nSIZE = len(BLOB)\n"


def test_a_paragraph_of_200000_characters_on_one_line_keeps_the_page_light(
    scripted_server: IdeServer, page: Any
) -> None:
    open_new_workspace(scripted_server, page, "long prose")
    _ask(page, "[script:long-prose][rate:20000][ttft:0]")
    turn = page.locator(".turn").last
    turn.locator(".badge.outcome", has_text="completed").wait_for(timeout=60_000)
    page.locator(".tab.active", has_text="after.py").wait_for(timeout=LIVE_WAIT_MS)
    _wait_editor_doc(page, WRITTEN)  # the file written after the paragraph, whole
    assert server_text(page, "after.py") == WRITTEN

    # The page holds the paragraph's end, in parts of bounded size, and a bounded number of nodes.
    assert page.evaluate(_TRANSCRIPT_NODES) < 150
    parts = turn.locator(".prose > .prose-part").evaluate_all("(parts) => parts.map((part) => part.textContent.length)")
    assert max(parts) <= PART_MAX_CHARS, parts
    shown = turn.evaluate(_PROSE)
    assert shown.endswith("Done.\n") and 20_000 < len(shown) < 40_000
    assert (LONG_PROSE + "\n").endswith(shown.removesuffix("Done.\n"))
    assert turn.locator(".chip[data-path='after.py'][data-state='applied']").count() == 1
    page.screenshot(path=str(ROOT / "test-artifacts" / "long_prose.png"))

    # The rest is a click away: then the whole paragraph is on the page.
    more = turn.locator(".prose-more")
    assert more.inner_text().startswith("Show ")
    more.click()
    assert turn.evaluate(_PROSE) == LONG_PROSE + "\nDone.\n"


def test_older_turns_fold_to_one_line_and_open_again(ide_server: IdeServer, page: Any) -> None:
    open_new_workspace(ide_server, page, "folding")
    turns = 8  # the transcript keeps the last 6 finished turns open (transcript.js FULL_TURNS)
    for i in range(turns):
        _ask(page, f'[rate:3000][say]Turn {i}: a few words.\n<write path="f{i}.py">\nx = {i}\n</write>\n'
                   f"Done {i}.\n[/say]")
        page.locator(".turn").nth(i).locator(".badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    articles = page.locator("#transcript .turn")
    assert articles.count() == turns
    articles.nth(turns - 7).locator(".prose-fold").wait_for(timeout=LIVE_WAIT_MS)  # when the page is idle
    for i in range(turns):
        folded = i < turns - 6
        assert articles.nth(i).locator(".prose-fold").count() == int(folded), i
        assert articles.nth(i).locator(".prose-part").count() == (0 if folded else 3), i
        assert articles.nth(i).locator(".turn-foot").count() == int(not folded), i
    first = articles.nth(0)
    fold = first.locator(".prose-fold")
    assert fold.inner_text().startswith("completed") and "1 edit" in fold.inner_text()

    fold.click()  # open again: its text, its chip (which still opens its file) and its footer
    assert first.evaluate(_PROSE) == "Turn 0: a few words.\nDone 0.\n"
    chip = first.locator(".chip[data-path='f0.py'][data-state='applied']")
    assert chip.locator(".chip-count").inner_text() == "+1"
    first.locator(".turn-foot .badge.outcome", has_text="completed").wait_for()
    chip.click()
    page.locator(".tab.active", has_text="f0.py").wait_for(timeout=LIVE_WAIT_MS)
    _wait_editor_doc(page, "x = 0\n")


# The lines the editor shows (first and last, 1-based), from its view.
_SHOWN_LINES = f"""() => {{{_FIND_VIEW}
    const box = view.scrollDOM.getBoundingClientRect();
    const top = view.lineBlockAtHeight(view.scrollDOM.scrollTop);
    const bottom = view.lineBlockAtHeight(view.scrollDOM.scrollTop + box.height - 1);
    return [view.state.doc.lineAt(top.from).number, view.state.doc.lineAt(bottom.from).number, view.state.doc.lines];
}}"""


def test_a_file_written_at_20k_tokens_a_second_is_followed_to_its_end(ide_server: IdeServer, page: Any) -> None:
    """At this rate a 300-line file lands in a few updates of a hundred lines and more: the
    editor draws each and moves to the model's line a frame later (tabs.js), and ends where the
    file ends, whole."""
    open_new_workspace(ide_server, page, "fast file")
    create_file(page, "seed.py")
    body = _file(300)
    _ask(page, f'[rate:20000][say]Writing it.\n<write path="fast.py">\n{body}</write>\nDone.\n[/say]')
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".tab.active", has_text="fast.py").wait_for(timeout=LIVE_WAIT_MS)
    _wait_editor_doc(page, body)
    page.wait_for_function(f"() => {{ const [, last, lines] = ({_SHOWN_LINES})(); return last >= lines - 2; }}",
                           timeout=LIVE_WAIT_MS)
    first, last, lines = page.evaluate(_SHOWN_LINES)
    assert lines == 301 and first > 200, (first, last, lines)  # the end of the file, not its start
    assert server_text(page, "fast.py") == body
