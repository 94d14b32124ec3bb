"""A steered small-model turn that re-writes the file's function unchanged never shows it twice
(issue 27, item 9): the editor is sampled at every animation frame of the turn.

The bundled SmolLM2 model is too slow for CI; the scripted engine writes the same shape of
answer (a code fence with the file's `def is_prime` again, unchanged) on an IDE whose prompts
ask for whole files, as for the small model.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LIVE_WAIT_MS, IdeServer, open_new_workspace, wait_for_server_text

pytestmark = pytest.mark.browser

IS_PRIME = """\
def is_prime(n):
    if n < 2:
        return False
    for i in range(2, int(n ** 0.5) + 1):
        if n % i == 0:
            return False
    return True
"""
FILE = IS_PRIME + "\n\nprint(is_prime(7))\n"
THINKING = "Let me look at the function again and think about what could be improved here. " * 4
AGAIN = f"Sure! Here is the function:\n\n```python\n{IS_PRIME}\nprint(is_prime(7))\n```\n"

# Every animation frame: how many `def is_prime` the editor shows (its text and the ghost of
# the line being written), and the text of any frame that shows more than one.
SAMPLE = """() => {
    const seen = { frames: 0, most: 0, doubled: null, stop: false };
    const tick = () => {
        const text = document.querySelector(".cm-content")?.innerText ?? "";
        const count = (text.match(/def is_prime/g) || []).length;
        seen.frames += 1;
        seen.most = Math.max(seen.most, count);
        if (count > 1 && seen.doubled === null) seen.doubled = text;
        if (!seen.stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    window.sparkFrames = seen;
}"""


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def test_a_steered_fence_that_changes_nothing_never_shows_the_function_twice(
    small_model_server: IdeServer, page: Any
) -> None:
    open_new_workspace(small_model_server, page, "fence preview")
    _ask(page, f"[rate:2000][say]```python\n{FILE}```\n[/say]")  # into an empty main.py: the file
    wait_for_server_text(page, "main.py", FILE)
    page.locator(".cm-content", has_text="print(is_prime(7))").wait_for(timeout=LIVE_WAIT_MS)

    page.evaluate(SAMPLE)
    _ask(page, f"[rate:40][say]{THINKING}[/say]")
    page.locator(".turn.running").wait_for(timeout=LIVE_WAIT_MS)
    _ask(page, f"[rate:30][say]{AGAIN}[/say]")  # Enter while it runs: a steer
    steered = page.locator(".turn").last
    steered.locator(".badge.steer").wait_for(timeout=LIVE_WAIT_MS)
    steered.locator(".turn-foot[data-reason='no_changes']").wait_for(timeout=LIVE_WAIT_MS)
    seen = page.evaluate("() => { window.sparkFrames.stop = true; return window.sparkFrames; }")

    assert seen["frames"] > 60, seen  # the editor was watched through the whole turn
    assert seen["doubled"] is None, f"a frame showed def is_prime twice:\n{seen['doubled']}"
    assert seen["most"] == 1
    wait_for_server_text(page, "main.py", FILE)
