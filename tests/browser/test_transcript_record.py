"""The transcript tells the truth: a fence shows the code the model wrote in it, on the live
page, after a reload, to a late joiner and in the replay, whatever a guest typed into the
file meanwhile; a block the model was stopped in shows what was rolled back, struck through;
a long one shows its bounded start. The replay ends with no block still "writing" (not even
for the frame after a seek) and starts without an empty tab."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

PRIME = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
SLOW = "".join(f"def square_{i}(x):\n    return x * x + {i}\n" for i in range(20))
GRACE = "# Grace was here\n"
# A fence longer than a block shows (400 lines, of 2,000 characters at most): its start and
# what was left out.
LONG_LINE = f"DATA = [{', '.join(str(i * i) for i in range(400))}]"
LONG = LONG_LINE + "\n" + "".join(f"v{i} = {i}\n" for i in range(449))
LONG_SHOWN = LONG_LINE[:2000] + "…\n" + "".join(f"v{i} = {i}\n" for i in range(399))

# Every block of the transcript as a person reads it: its state, its chip (kind, path, line
# count, state), its code, whether the code is struck through, and the note of lines left out.
BLOCKS_JS = """(box) => [...box.querySelectorAll('.turn .code-block')].map((block) => ({
    state: block.dataset.state,
    chip: block.querySelector('.chip').innerText,
    code: block.querySelector('pre').innerText,
    struck: getComputedStyle(block.querySelector('pre')).textDecorationLine.includes('line-through'),
    more: block.querySelector('.code-more').innerText,
}))"""

# Drag the scrubber to the end and read, in the same task, the states of the blocks of every
# finished turn (what the page shows once that task is done).
SEEK_TO_END_JS = """(range) => {
    range.value = range.max;
    range.dispatchEvent(new Event('input'));
    return [...document.querySelectorAll('#replay-transcript .turn')]
        .filter((turn) => turn.querySelector('.turn-foot'))
        .map((turn) => [...turn.querySelectorAll('.chip')].map((chip) => chip.dataset.state || ''));
}"""


def _ask(page: Any, text: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press("Enter")


def _blocks(page: Any, box: str = "#transcript") -> list[dict[str, Any]]:
    return list(page.locator(box).evaluate(BLOCKS_JS))


def _settled(page: Any, turns: int, box: str = "#transcript") -> list[dict[str, Any]]:
    """The blocks once ``turns`` turns are over and every block has its final state."""
    transcript = page.locator(box)
    transcript.locator(".turn .badge.outcome").nth(turns - 1).wait_for(timeout=LIVE_WAIT_MS)
    page.wait_for_function(
        "(box) => !document.querySelector(box).querySelector(\".code-block[data-state='streaming']\")",
        arg=box, timeout=LIVE_WAIT_MS,
    )
    return _blocks(page, box)


def _wait_for_start(page: Any, path: str, start: str) -> None:
    """Wait until the server's text of ``path`` starts with ``start`` (the typing reached it)."""
    deadline = time.monotonic() + LIVE_WAIT_MS / 1000
    while not (server_text(page, path) or "").startswith(start):
        assert time.monotonic() < deadline, f"the server's {path} does not start with {start!r}"
        page.wait_for_timeout(100)


def _type_at_top(person: Any, text: str) -> None:
    person.locator("#tree a[data-open='main.py']").click()
    person.locator(".tab.active", has_text="main.py").wait_for(timeout=LIVE_WAIT_MS)
    person.locator(".cm-content").click()
    person.keyboard.press("Control+Home")
    person.keyboard.type(text)


def test_reload_late_join_and_replay_show_the_blocks_the_model_wrote(
    small_model_server: IdeServer, page: Any, chromium: Any,
) -> None:
    server = small_model_server
    open_new_workspace(server, page, "truthful transcript")
    create_file(page, "main.py")
    with second_person(server, page, chromium, role="collaborator", guest_name="Grace") as guest:
        _ask(page, f"[rate:400][say]Here is a prime check:\n```python\n{PRIME}```\nDone.\n[/say]")
        _settled(page, 1)
        wait_for_server_text(page, "main.py", PRIME)
        _type_at_top(guest, GRACE)  # the guest types into the file the block wrote
        wait_for_server_text(page, "main.py", GRACE + PRIME)

        # A second fence, stopped while the model writes it: rolled back, struck through.
        _ask(page, f"[rate:60][say]Squares:\n```python\n{SLOW}```\n[/say]")
        page.locator("#transcript .code-block[data-state='streaming'] pre", has_text="square_2").wait_for(
            timeout=LIVE_WAIT_MS)
        page.get_by_label("Prompt").press("Escape")
        _settled(page, 2)
        _ask(page, f"[rate:5000][say]Data:\n```python\n{LONG}```\n[/say]")
        live = _settled(page, 3)
        guest.keyboard.type("# and here\n")  # more typing after the turns, into the same file
        typed = GRACE + "# and here\n" + PRIME
        _wait_for_start(page, "main.py", typed)

        assert [block["state"] for block in live] == ["applied", "rolled_back", "applied"]
        assert live[0]["code"] == PRIME.rstrip("\n") and not live[0]["struck"]
        stopped = live[1]["code"]
        assert stopped.startswith("def square_0(x):\n    return x * x + 0\ndef square_1") and SLOW.startswith(stopped)
        assert live[1]["struck"]
        assert live[2]["code"] == LONG_SHOWN.rstrip("\n") and live[2]["more"] == "50 more lines not shown"
        assert _settled(guest, 3) == live  # the guest saw the same while typing

        page.reload()
        assert _settled(page, 3) == live
        with second_person(server, page, chromium, role="viewer", guest_name="Late") as late:
            assert _settled(late, 3) == live

    # The replay starts where the history does, before any file: no tab, and it says so.
    page.locator("#history a", has_text="Replay this session").click()
    page.wait_for_url("**/replay")
    page.locator("#replay[data-ready=true]").wait_for(timeout=LIVE_WAIT_MS)
    assert page.locator("#replay .tabs .tab").count() == 0
    assert page.locator("#replay-editor").inner_text() == "The workspace has no files at this moment."
    # A seek to the end draws each finished turn with its blocks' last states at once.
    states = page.locator("#replay-scrubber").evaluate(SEEK_TO_END_JS)
    assert states == [["applied"], ["rolled_back"], ["applied"]]
    assert _settled(page, 3, "#replay-transcript") == live
    # Played at 20x from the start: the same blocks, none still writing.
    page.get_by_label("Speed").select_option("20")
    page.get_by_role("button", name="Play").click()
    page.locator(".tabs .tab", has_text="main.py").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay[data-state=ended]").wait_for(timeout=LIVE_WAIT_MS)
    assert _settled(page, 3, "#replay-transcript") == live
    writing = page.locator("#replay-transcript .chip[data-state='streaming'], #replay-transcript .turn.running")
    assert writing.count() == 0

    # A block whose final status never came (its server went away mid-block) does not say
    # "writing" once its turn has ended: the replay's record with the first block's end
    # replaced by a status of it still writing.
    def without_first_final_status(route: Any) -> None:
        data = route.fetch().json()
        final = next(i for i, e in enumerate(data["events"])
                     if e["type"] == "edit.status" and e["state"] not in ("locating", "streaming"))
        event = data["events"][final]
        event["state"] = "streaming"  # its last status stored: the one before its end
        del event["detail"]["code"]
        route.fulfill(json=data)

    page.route("**/replay/data", without_first_final_status)
    page.reload()
    page.locator("#replay[data-ready=true]").wait_for(timeout=LIVE_WAIT_MS)
    page.locator("#replay-scrubber").evaluate("(r) => { r.value = r.max; r.dispatchEvent(new Event('input')); }")
    first = page.locator("#replay-transcript .turn").first.locator(".chip")
    first.locator(".chip-state", has_text="not finished").wait_for(timeout=LIVE_WAIT_MS)
    assert first.get_attribute("data-state") == "streaming" and "unfinished" in (first.get_attribute("class") or "")
