"""The transcript shows what the server parsed: prose, a chip per edit block, fenced code.

The browser does not parse the model's output any more: it renders `turn.prose` (the text
outside blocks) and `edit.status` (a block opens with its first status). The model is the
scripted engine: a prompt's ``[say]...[/say]`` is what it answers, at ``[rate:N]`` tokens/s.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    open_new_workspace,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

SEED = "seed = 1\n"


def _with_seed_file(server: IdeServer, page: Any, name: str) -> None:
    open_new_workspace(server, page, name)
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type(SEED)
    wait_for_server_text(page, "a.py", SEED)


def _ask_and_wait(page: Any, answer: str) -> Any:
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:300][say]{answer}[/say]")
    box.press("Enter")
    turn = page.locator(".turn").last
    turn.locator(".badge.outcome", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
    return turn


def _prose(turn: Any) -> str:
    """The transcript's own text of a turn: its prose, without chips and code blocks (prose is
    laid out in parts, .prose-part, with the chips between its text)."""
    return str(turn.locator(".prose").evaluate(
        "(box) => [...box.querySelectorAll(':scope > .prose-part')].flatMap((part) => [...part.childNodes])"
        ".filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.data).join('')"
    ))


def test_an_edit_block_is_a_chip_with_its_line_count_between_its_prose(ide_server: IdeServer, page: Any) -> None:
    _with_seed_file(ide_server, page, "transcript chips")
    turn = _ask_and_wait(page, (
        "Fixing the seed.\n"
        '<edit path="a.py">\n<old_text>\nseed = 1\n</old_text>\n'
        "<new_text>\nseed = 2\nmore = 3\n</new_text>\n</edit>\n"
        "Done.\n"
    ))
    chip = turn.locator(".chip[data-state='applied']")
    chip.wait_for(timeout=LIVE_WAIT_MS)
    assert chip.locator(".chip-kind").inner_text().lower() == "edit"
    assert chip.locator(".chip-path").inner_text() == "a.py"
    assert chip.locator(".chip-count").inner_text() == "+2"
    assert _prose(turn) == "Fixing the seed.\nDone.\n"
    parts = turn.locator(".prose-part > *").evaluate_all("(nodes) => nodes.map((node) => node.className)")
    assert parts == ["chip", "hunk-review"]  # the chip, and its Keep / Undo (hunk_review.js)
    wait_for_server_text(page, "a.py", "seed = 2\nmore = 3\n")
    create_file(page, "b.py")  # another tab in front; the chip brings a.py back
    chip.click()
    page.locator(".tab.active", has_text="a.py").wait_for()


def test_a_search_replace_blocks_path_line_and_fence_are_not_prose(ide_server: IdeServer, page: Any) -> None:
    _with_seed_file(ide_server, page, "transcript search replace")
    turn = _ask_and_wait(page, (
        "Changing it:\na.py\n```python\n<<<<<<< SEARCH\nseed = 1\n=======\nseed = 5\n>>>>>>> REPLACE\n```\n"
        "All set.\n"
    ))
    chip = turn.locator(".chip[data-state='applied']")
    chip.wait_for(timeout=LIVE_WAIT_MS)
    assert chip.locator(".chip-path").inner_text() == "a.py"
    assert chip.locator(".chip-count").inner_text() == "+1"
    assert _prose(turn) == "Changing it:\nAll set.\n"
    wait_for_server_text(page, "a.py", "seed = 5\n")


def test_a_small_models_code_fence_is_highlighted_code_not_prose(small_model_server: IdeServer, page: Any) -> None:
    open_new_workspace(small_model_server, page, "transcript fence")
    code = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
    usage = "Use it like this:\n```python\nprint(is_prime(7))\n```\n"
    turn = _ask_and_wait(page, f"Here is a prime check:\n```python\n{code}```\n{usage}")
    block = turn.locator(".code-block[data-state='applied']")
    block.wait_for(timeout=LIVE_WAIT_MS)
    assert block.locator(".chip-path").inner_text() == "main.py"
    assert block.locator("pre").inner_text() == code.rstrip("\n")
    keywords = block.locator(".tok-keyword").all_inner_texts()
    assert {"def", "return", "for", "in"} <= set(keywords), keywords
    assert block.locator(".tok-string, .tok-number").count() > 0
    # The usage example after the first fence is prose, as the model wrote it.
    assert _prose(turn) == f"Here is a prime check:\n{usage}"
    assert "def is_prime" not in _prose(turn)
    wait_for_server_text(page, "main.py", code)


def test_a_fenced_block_shows_its_code_growing_as_the_model_writes(small_model_server: IdeServer, page: Any) -> None:
    open_new_workspace(small_model_server, page, "transcript fence stream")
    code = "".join(f"value_{i} = {i} * {i}\n" for i in range(24))
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:40][say]Counting.\n```python\n{code}```\n[/say]")
    box.press("Enter")
    block = page.locator(".turn .code-block")
    block.wait_for(timeout=LIVE_WAIT_MS)
    seen: list[int] = []
    deadline = time.monotonic() + LIVE_WAIT_MS / 1000
    while not page.locator(".turn .badge.outcome").count():
        assert time.monotonic() < deadline, f"the turn did not end; the code block showed {seen}"
        rows = block.locator("pre").inner_text().count("value_")
        if not seen or rows != seen[-1]:
            seen.append(rows)
        page.wait_for_timeout(50)
    assert len(seen) >= 3 and seen == sorted(seen), seen  # line by line, never backwards
    block.locator("pre", has_text="value_23 = 23 * 23").wait_for(timeout=LIVE_WAIT_MS)
    assert block.locator("pre").inner_text() == code.rstrip("\n")
    assert block.get_attribute("data-state") == "applied"
