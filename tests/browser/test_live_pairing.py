"""Live pairing in a real browser: the model's edits stream into the editor, steer, revert
(asked first, and undone).

The model is our scripted engine: a prompt's ``[say]...[/say]`` is played at ``[rate:N]``
tokens/s, so each test knows exactly what the model writes and how fast.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import (
    ARTIFACTS,
    IdeServer,
    create_file,
    open_new_workspace,
    second_person,
    server_text,
    wait_for_server_text,
)
from tests.support.tcp_proxy import proxied

pytestmark = pytest.mark.browser

SEED = "seed = 1\n"
LONG_BODY = "".join(f"value_{i} = {i} * {i}\n" for i in range(80))
SLOW_WRITE = f'[rate:40][say]Writing the table now.\n<write path="a.py">\n{LONG_BODY}</write>\nDone.\n[/say]'
STEER = '[rate:400][say]Steered: a shorter file.\n<write path="a.py">\nprint("steered")\n</write>\n[/say]'
WAIT_MS = 20_000


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"live_{name}.png"))


def _start_session(server: IdeServer, page: Any, name: str) -> str:
    """Sign in, make a workspace (its live editor opens), create a.py = SEED; returns its URL."""
    url = open_new_workspace(server, page, name)
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type(SEED)
    wait_for_server_text(page, "a.py", SEED)
    return url


def _document(page: Any, path: str) -> str:
    """The file as the server's live document has it."""
    return server_text(page, path) or ""


def _wait_document(page: Any, path: str, check: Callable[[str], bool]) -> None:
    deadline = time.monotonic() + WAIT_MS / 1000
    while not check(text := _document(page, path)):
        assert time.monotonic() < deadline, f"{path} never got there; it holds {text[:200]!r}"
        page.wait_for_timeout(50)


def _ask(page: Any, text: str, key: str = "Enter") -> None:
    box = page.get_by_label("Prompt")
    box.fill(text)
    box.press(key)


def test_edits_stream_in_then_a_steer_replaces_them_and_a_revert_persists(ide_server: IdeServer, page: Any) -> None:
    session_url = _start_session(ide_server, page, "live pairing")

    _ask(page, SLOW_WRITE)
    page.locator(".turn.running").wait_for(timeout=WAIT_MS)
    page.locator(".cm-live-ghost").wait_for(timeout=WAIT_MS)  # the unfinished line, drawn faded
    assert page.locator(".cm-live-region").count() > 0  # the region being written is marked
    seen: list[str] = []
    deadline = time.monotonic() + WAIT_MS / 1000
    while len(seen) < 4 and time.monotonic() < deadline:
        text = page.locator(".cm-content").inner_text()
        if "value_" in text and (not seen or text != seen[-1]):
            seen.append(text)
        page.wait_for_timeout(100)
    _shot(page, "streaming")
    assert len(seen) >= 4, f"the editor should change while the model writes; saw {len(seen)} states"
    counts = [text.count("value_") for text in seen]
    assert counts == sorted(counts) and counts[0] < counts[-1], counts
    assert page.locator(".turn.running").count() == 1, "the slow write must still be running for the steer"
    assert "value_79" not in _document(page, "a.py")

    _ask(page, STEER)  # Enter while the model writes = steer
    first = page.locator(".turn").nth(0)
    first.locator(".badge.outcome", has_text="steered").wait_for(timeout=WAIT_MS)
    first.locator(".chip[data-state='rolled_back']").wait_for(timeout=WAIT_MS)
    second = page.locator(".turn").nth(1)
    second.locator(".badge.steer").wait_for()
    second.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
    page.locator(".cm-content", has_text='print("steered")').wait_for(timeout=WAIT_MS)
    assert _document(page, "a.py") == 'print("steered")\n'
    assert page.locator(".cm-live-ghost").count() == 0
    assert page.locator("[data-field=steer]").inner_text().startswith("steer ")
    _shot(page, "steered")

    history = page.locator("#history")
    turn = second.get_attribute("data-turn")
    native: list[str] = []
    page.on("dialog", lambda dialog: native.append(dialog.message))  # window.confirm: never
    revert = history.locator(f"[data-revert='{turn}']")
    revert.wait_for(timeout=WAIT_MS)
    # Revert asks first, in the page's own dialog; Cancel changes nothing.
    revert.click()
    asked = page.get_by_role("dialog", name="Revert this turn?")
    asked.wait_for()
    assert "Steered: a shorter file." in asked.locator("[data-confirm=prompt]").inner_text()
    assert "until the next turn starts" in asked.inner_text()
    _shot(page, "revert_asks")
    asked.get_by_role("button", name="Cancel").click()
    asked.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert _document(page, "a.py") == 'print("steered")\n' and revert.is_enabled()
    revert.click()
    asked.get_by_role("button", name="Revert").click()
    _wait_document(page, "a.py", lambda text: text == SEED)
    history.locator(".badge.reverted").wait_for(timeout=WAIT_MS)
    # ... and is undone until the next turn starts.
    history.locator(f"[data-restore='{turn}']").click()
    _wait_document(page, "a.py", lambda text: text == 'print("steered")\n')
    history.locator(f"[data-revert='{turn}']").wait_for(timeout=WAIT_MS)
    assert history.locator(".badge.reverted").count() == 0
    history.locator(f"[data-revert='{turn}']").click()
    asked.get_by_role("button", name="Revert").click()
    _wait_document(page, "a.py", lambda text: text == SEED)
    history.locator(".badge.reverted").wait_for(timeout=WAIT_MS)
    # A turn's diff is fetched when its file is opened in the history.
    diff = history.locator(f"[data-turn='{second.get_attribute('data-turn')}'] details.history-diff").first
    diff.locator("summary").click()
    diff.locator(".diff-body .diff", has_text='print("steered")').wait_for(timeout=WAIT_MS)
    _shot(page, "reverted")

    page.goto(ide_server.url + "/")  # away and back: a real reload, not a jump within the page
    page.goto(f"{session_url}#a.py")
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
    page.locator(".tab.active", has_text="a.py").wait_for(timeout=WAIT_MS)
    page.locator(".cm-content", has_text="seed = 1").wait_for(timeout=WAIT_MS)
    assert _document(page, "a.py") == SEED
    assert page.locator("#history .history-turn").count() == 2
    history.locator(f"[data-restore='{turn}']").wait_for(timeout=WAIT_MS)  # still possible after a reload
    _shot(page, "reloaded")
    _ask(page, "[rate:2000][say]Nothing to change.[/say]")
    history.locator(".history-turn").nth(2).wait_for(timeout=WAIT_MS)
    history.locator(f"[data-restore='{turn}']").wait_for(state="detached", timeout=WAIT_MS)  # a turn started
    assert native == []


def test_a_viewer_watches_the_stream_read_only(ide_server: IdeServer, page: Any, chromium: Any) -> None:
    _start_session(ide_server, page, "live viewer")
    with second_person(ide_server, page, chromium, role="viewer", username="vera") as viewer:
        assert viewer.locator("#prompt").count() == 0  # viewers watch, they do not drive
        assert viewer.locator(".prompt.watching").count() == 1
        page.locator(".presence .person", has_text="vera").wait_for(timeout=WAIT_MS)

        _ask(page, '[rate:300][say]For the viewer.\n<write path="shown.py">\nshown = True\n</write>\n[/say]')
        viewer.locator(".tab.active", has_text="shown.py").wait_for(timeout=WAIT_MS)  # the tab opens itself
        viewer.locator(".cm-content", has_text="shown = True").wait_for(timeout=WAIT_MS)
        viewer.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
        page.locator(".tree a[data-open='shown.py']").wait_for(timeout=WAIT_MS)  # the owner's tree follows
        assert viewer.locator(".cm-content").get_attribute("contenteditable") == "false"
        viewer.locator(".cm-content").click()
        viewer.keyboard.type("nope")
        assert "nope" not in viewer.locator(".cm-content").inner_text()
        # Then the viewer opens another file: its place (Yjs awareness) goes to the server on the
        # same socket after any edit the keys made, so once the owner sees it, that edit had come.
        viewer.locator(".tree a[data-open='a.py']").click()
        page.locator(".presence .person[data-files='a.py']", has_text="vera").wait_for(timeout=WAIT_MS)
        assert "nope" not in _document(page, "shown.py")
        assert "nope" not in page.locator(".cm-content").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        viewer.screenshot(path=str(ARTIFACTS / "live_viewer.png"))


def test_typing_in_one_file_while_the_model_writes_another_is_kept(ide_server: IdeServer, page: Any) -> None:
    _start_session(ide_server, page, "live typing")
    body = "".join(f"row_{i} = {i}\n" for i in range(60))
    _ask(page, f'[rate:20][say]A new module.\n<write path="other.py">\n{body}</write>\n[/say]')
    page.locator(".tab.busy", has_text="other.py").wait_for(timeout=WAIT_MS)  # its tab opens itself

    page.locator(".tab", has_text="a.py").click()
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("typed = 2\n")
    written = _document(page, "other.py").count("row_")
    _wait_document(page, "other.py", lambda text: f"row_{written + 2} " in text)
    # The model kept writing other.py, but the person's tab, text and cursor stayed put.
    assert page.locator(".tab.active").inner_text().startswith("a.py")
    assert page.locator(".tab.busy", has_text="other.py").count() == 1
    page.keyboard.type("more = 3\n")
    wait_for_server_text(page, "a.py", SEED + "typed = 2\nmore = 3\n")
    page.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
    assert _document(page, "other.py") == body
    assert _document(page, "a.py") == SEED + "typed = 2\nmore = 3\n"
    _shot(page, "typing")


def test_a_dropped_socket_reconnects_and_the_transcript_has_no_gap_or_repeat(
    ide_server: IdeServer, page: Any
) -> None:
    with proxied(int(ide_server.url.rsplit(":", 1)[1])) as network:
        _start_session(IdeServer(url=network.url, env=ide_server.env), page, "live reconnect")
        body = "".join(f"item_{i} = {i}\n" for i in range(40))
        _ask(page, f'[rate:40][say]Before the drop.\n<write path="a.py">\n{body}</write>\nAfter the drop.\n[/say]')
        _wait_document(page, "a.py", lambda text: "item_3 " in text)
        network.drop()  # the connection is cut under the page, as a network loss would
        page.locator("[data-field=connection]", has_text="live").wait_for(timeout=WAIT_MS)
        turn = page.locator(".turn").first
        turn.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
        assert network.connections >= 2  # it did reconnect
        assert page.locator(".toast", has_text="Back in sync").count() == 0  # caught up event by event

        assert _document(page, "a.py") == body
        prose = turn.locator(".prose").inner_text()
        assert prose.count("Before the drop.") == 1
        assert prose.count("After the drop.") == 1
        assert turn.locator(".chip").count() == 1
        assert turn.locator(".chip[data-state='applied'] .chip-count").inner_text() == "+40"


def test_a_refused_message_shows_an_error_notice(ide_server: IdeServer, page: Any) -> None:
    _start_session(ide_server, page, "live errors")
    _ask(page, "x" * 20_001)  # the server caps a prompt at 20,000 characters
    page.locator(".toast.error", has_text="longer than").wait_for(timeout=WAIT_MS)
    assert page.locator(".turn").count() == 0


def test_escape_stops_the_model_and_rolls_back_its_block(ide_server: IdeServer, page: Any) -> None:
    _start_session(ide_server, page, "live stop")
    _ask(page, SLOW_WRITE)
    _wait_document(page, "a.py", lambda text: "value_2 " in text)
    page.get_by_label("Prompt").press("Escape")
    turn = page.locator(".turn").first
    turn.locator(".badge.outcome", has_text="cancelled").wait_for(timeout=WAIT_MS)
    turn.locator(".chip[data-state='rolled_back']").wait_for(timeout=WAIT_MS)
    _wait_document(page, "a.py", lambda text: text == SEED)
    assert page.locator(".cm-live-ghost").count() == 0
    assert page.get_by_role("button", name="Send").is_visible()  # idle again: Enter prompts


def test_alt_enter_queues_a_prompt_behind_the_running_turn(ide_server: IdeServer, page: Any) -> None:
    _start_session(ide_server, page, "live queue")
    _ask(page, SLOW_WRITE.replace("[rate:40]", "[rate:120]"))
    page.locator(".turn.running").wait_for(timeout=WAIT_MS)
    _ask(page, '[rate:300][say]Second.\n<write path="queued.py">\nqueued = True\n</write>\n[/say]', key="Alt+Enter")
    page.locator(".toast", has_text="Queued").wait_for(timeout=WAIT_MS)
    second = page.locator(".turn").nth(1)
    second.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
    first = page.locator(".turn").first
    assert first.locator(".badge.outcome").inner_text() == "completed"  # not steered: it ran to the end
    assert _document(page, "a.py") == LONG_BODY
    assert _document(page, "queued.py") == "queued = True\n"


def _editor_text(person: Any) -> str:
    """The open file as the page's editor shows it (every line: the file fits the view),
    without the widgets drawn into it (others' carets and their names, the ghost line)."""
    return str(person.evaluate("""() => [...document.querySelectorAll(".cm-content .cm-line")].map((line) => {
        const copy = line.cloneNode(true);
        copy.querySelectorAll("[contenteditable=false], .cm-ySelectionCaret").forEach((node) => node.remove());
        return copy.textContent;
    }).join("\\n")"""))


def _exported(page: Any, path: str) -> str | None:
    """``path`` as the workspace's export (.zip of the stored file rows) has it, or None."""
    data = page.evaluate("""async () => {
        const workspace = document.getElementById("live").dataset.workspace;
        const response = await fetch(`/w/${workspace}/export.zip`);
        return response.ok ? Array.from(new Uint8Array(await response.arrayBuffer())) : null;
    }""")
    if data is None:
        return None
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        return archive.read(path).decode() if path in archive.namelist() else None


def test_a_person_types_in_the_lines_the_model_is_writing_and_both_are_kept(
    ide_server: IdeServer, page: Any, chromium: Any
) -> None:
    _start_session(ide_server, page, "live same lines")
    rows = [f"row_{i} = {i}" for i in range(16)]
    body = "".join(f"{row}\n" for row in rows)
    typed = "cole = 'here'"
    expected = "".join(f"{row}\n" + (f"{typed}\n" if row == "row_2 = 2" else "") for row in rows)
    with second_person(ide_server, page, chromium, role="collaborator", username="cole") as mate:
        # With steering by editing on, typing there would redirect the model (tests/browser/
        # test_edit_steer.py); with it off, it is ordinary concurrent typing, kept beside the model's.
        mate.locator("#edit-steer input[name=edit_steer]").uncheck()
        _ask(page, f'[rate:20][say]Rows.\n<write path="a.py">\n{body}</write>\n[/say]')
        mate.locator(".cm-line", has_text="row_3 = 3").wait_for(timeout=WAIT_MS)  # written as far as row_3
        mate.locator(".cm-line", has_text="row_2 = 2").click()  # into the lines being written
        mate.keyboard.press("End")
        mate.keyboard.type(f"\n{typed}")
        _wait_document(page, "a.py", lambda text: typed in text)
        assert "row_15 " not in _document(page, "a.py"), "the model had finished before the person typed"
        for person in (page, mate):
            person.locator(".turn .badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
        assert _document(page, "a.py") == expected  # the live document, over the HTTP API
        for person in (page, mate):
            person.locator(".cm-content", has_text="row_15 = 15").wait_for(timeout=WAIT_MS)
            assert _editor_text(person) == expected, person.url
        deadline = time.monotonic() + WAIT_MS / 1000
        while (stored := _exported(page, "a.py")) != expected:  # the file rows follow a moment later
            assert time.monotonic() < deadline, f"the stored file holds {stored!r}"
            page.wait_for_timeout(100)
        _shot(mate, "same_lines")


def test_a_collaborator_steers_the_owners_turn(ide_server: IdeServer, page: Any, chromium: Any) -> None:
    _start_session(ide_server, page, "live collaborator")
    with second_person(ide_server, page, chromium, role="collaborator", username="cole") as mate:
        _ask(page, SLOW_WRITE)
        mate.locator(".turn.running").wait_for(timeout=WAIT_MS)
        mate.locator(".cm-live-ghost").wait_for(timeout=WAIT_MS)  # the tab opened and shows the stream
        mate.get_by_role("button", name="Steer").wait_for()
        _ask(mate, STEER)

        for viewer in (page, mate):
            viewer.locator(".turn").first.locator(".badge.outcome", has_text="steered").wait_for(timeout=WAIT_MS)
            viewer.locator(".turn").nth(1).locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
            viewer.locator(".cm-content", has_text='print("steered")').wait_for(timeout=WAIT_MS)
        assert _document(page, "a.py") == 'print("steered")\n'
        mate.screenshot(path=str(ARTIFACTS / "live_collaborator.png"))


def test_an_edit_that_finds_nothing_is_marked_failed_and_explained(ide_server: IdeServer, page: Any) -> None:
    _start_session(ide_server, page, "live failed edit")
    missing = (
        '<edit path="a.py">\n<old_text>\nnot_in_the_file = 0\n</old_text>\n'
        "<new_text>\nx = 1\n</new_text>\n</edit>\n"
    )
    _ask(page, f"[rate:300][say]Trying.\n{missing}[/say]")
    page.locator(".turn .chip[data-state='failed']").wait_for(timeout=WAIT_MS)
    page.locator(".toast", has_text="The edit to a.py failed").wait_for(timeout=WAIT_MS)
    page.locator(".turn .badge.outcome").wait_for(timeout=WAIT_MS)
    assert _document(page, "a.py") == SEED


def test_a_page_too_far_behind_resyncs_and_converges(ide_server: IdeServer, page: Any) -> None:
    with proxied(int(ide_server.url.rsplit(":", 1)[1])) as network:
        _start_session(IdeServer(url=network.url, env=ide_server.env), page, "live resync")
        body = "".join(f"wide_{i} = {i} * {i}\n" for i in range(400))
        _ask(page, f'[rate:300][say]A long table.\n<write path="a.py">\n{body}</write>\nAll there.\n[/say]')
        page.locator(".turn.running").wait_for(timeout=WAIT_MS)
        network.down(4)  # offline while the model writes far more events than are replayed
        page.locator(".toast", has_text="Back in sync").wait_for(timeout=WAIT_MS)
        turn = page.locator(".turn").first
        turn.locator(".badge.outcome", has_text="completed").wait_for(timeout=WAIT_MS)
        assert _document(page, "a.py") == body
        page.locator(".cm-content", has_text="wide_399 = 399 * 399").wait_for(timeout=WAIT_MS)
        assert page.locator(".turn").count() == 1  # the transcript came again, once
        prose = turn.locator(".prose").inner_text()
        assert prose.count("A long table.") == 1 and prose.count("All there.") == 1
        assert page.locator(".cm-live-ghost").count() == 0
        assert page.get_by_role("button", name="Send").is_visible()
