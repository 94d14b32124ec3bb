"""A page adopts the document its room replaced (docs/pairing.md, "Replacing the document").

The IDE here replaces a room's document after every turn (its thresholds set to nothing), so
each turn the model finishes is followed by a ``document.replaced``. The page must take the
new document without a reload: the same tab, the same cursor, typing that still reaches the
server, the model's next edits still streaming in, and another person's page in step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import (
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    daphne,
    open_new_workspace,
    second_person,
    server_text,
    wait_for_server_text,
)

pytestmark = pytest.mark.browser

SEED = "first = 1\nsecond = 2\n"


@pytest.fixture(scope="module")
def replacing_server(ide_server: IdeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdeServer]:
    data = tmp_path_factory.mktemp("ide-replacing")
    env = {
        **ide_server.env, "SPARK_DATA_DIR": str(data),
        "SPARK_REPLACE_CHECK_TURNS": "1", "SPARK_REPLACE_RATIO": "1", "SPARK_REPLACE_SLACK_BYTES": "0",
    }
    with daphne(env, data) as server:
        yield server


class SocketLog:
    """The session socket's JSON frames, as the page received and sent them."""

    def __init__(self, page: Any) -> None:
        self.received: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        page.on("websocket", self._socket)

    def _socket(self, socket: Any) -> None:
        socket.on("framereceived", lambda payload: self._keep(self.received, payload))
        socket.on("framesent", lambda payload: self._keep(self.sent, payload))

    @staticmethod
    def _keep(into: list[dict[str, Any]], payload: Any) -> None:
        if isinstance(payload, str):
            into.append(json.loads(payload))

    def adopted(self) -> list[int]:
        return [frame["generation"] for frame in self.sent if frame.get("type") == "document.adopted"]


def _ask(page: Any, answer: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(f"[rate:400][say]{answer}[/say]")
    box.press("Enter")
    page.locator(".turn .badge.outcome", has_text="completed").last.wait_for(timeout=LIVE_WAIT_MS)


def _wait_adopted(page: Any, log: SocketLog, generation: int) -> None:
    for _ in range(200):
        if generation in log.adopted():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"the page never adopted generation {generation}: sent {log.adopted()}")


def test_the_page_adopts_a_replaced_document_and_keeps_the_view(
    replacing_server: IdeServer, page: Any, chromium: Any
) -> None:
    log = SocketLog(page)
    open_new_workspace(replacing_server, page, "replaced")
    create_file(page, "a.py")
    page.locator(".cm-content").click()
    page.keyboard.type(SEED)
    wait_for_server_text(page, "a.py", SEED)
    page.keyboard.press("ArrowUp")  # the cursor at the start of line 2 ("second = 2")

    with second_person(replacing_server, page, chromium, role="collaborator") as bob:
        bob_log = SocketLog(bob)
        bob.locator(".tree a[data-open='a.py']").click()
        bob.locator(".cm-content", has_text="second = 2").wait_for(timeout=LIVE_WAIT_MS)
        bob.reload()  # its socket log starts with this page's own socket
        bob.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)

        _ask(page, '<write path="b.py">\nmade = "by the model"\n</write>\n')
        _wait_adopted(page, log, 1)
        _wait_adopted(bob, bob_log, 1)
        page.locator(".tab", has_text="a.py").click()
        page.locator(".cm-content", has_text="second = 2").wait_for(timeout=LIVE_WAIT_MS)

        # The page goes on with the new document: typing reaches the server and the other page.
        page.locator(".cm-line", has_text="second = 2").click()
        page.keyboard.press("Home")
        page.keyboard.type("# typed after\n")
        expected = "first = 1\n# typed after\nsecond = 2\n"
        wait_for_server_text(page, "a.py", expected)
        bob.locator(".tree a[data-open='a.py']").click()
        bob.locator(".cm-content", has_text="# typed after").wait_for(timeout=LIVE_WAIT_MS)

        # The model's next turn streams into the new document, and a second replacement follows.
        _ask(page, '<write path="b.py">\nmade = "again"\n</write>\n')
        _wait_adopted(page, log, 2)
        assert server_text(page, "b.py") == 'made = "again"\n'
        page.locator(".tab", has_text="b.py").click()
        page.locator(".cm-content", has_text='made = "again"').wait_for(timeout=LIVE_WAIT_MS)
        bob.locator(".tree a[data-open='b.py']").click()
        bob.locator(".cm-content", has_text='made = "again"').wait_for(timeout=LIVE_WAIT_MS)
        assert server_text(page, "a.py") == expected

    # A page loaded now gets the new document at once: no replacement to adopt.
    fresh_log = SocketLog(page)
    page.reload()
    page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
    page.locator(".tree a[data-open='a.py']").click()
    page.locator(".cm-content", has_text="# typed after").wait_for(timeout=LIVE_WAIT_MS)
    hello = next(frame for frame in fresh_log.received if frame.get("type") == "hello")
    assert hello["generation"] == 2 and fresh_log.adopted() == []
