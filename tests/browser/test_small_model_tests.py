"""The embedded default shows test rounds (issue 30, item 5): with the bundled small model's
settings (``SPARK_EDIT_STYLE=whole-file``: a code fence is the whole open file), a workspace
holding a failing test and "make the tests pass", the page shows the IDE run the tests after
the model's answer, fail, ask again and end at the tests' verdict.

The bundled SmolLM2 is too slow for CI; the scripted engine writes the same shape of answer
(a fence with the whole file). Its first fix is wrong; asked again (a plain new request, as
for the small model) it writes the same file again, which changes nothing: the turn ends
``tests_failed``. A second prompt writes the right file: the tests pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LIVE_WAIT_MS, IdeServer, open_new_workspace, wait_for_server_text
from tests.browser.test_live_pairing import _ask
from tests.browser.test_model_runs import _file

pytestmark = pytest.mark.browser

APP = "def add(a, b):\n    return a - b\n"
TESTS = "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _fence(body: str) -> str:
    return f"[rate:2000][say]Here is the fixed file:\n\n```python\n{body}```\n[/say]"


def test_a_newcomer_sees_the_tests_run_fail_and_the_model_asked_again(small_model_server: IdeServer, page: Any) -> None:
    open_new_workspace(small_model_server, page, "small model tests")
    _file(page, "test_app.py", TESTS)
    _file(page, "app.py", APP)  # the open file: the small model's fence goes there

    _ask(page, _fence("def add(a, b):\n    return a * b\n"))
    turn = page.locator(".turn").last
    turn.locator(".turn-foot").wait_for(timeout=3 * LIVE_WAIT_MS)
    assert turn.locator(".turn-foot").get_attribute("data-reason") == "tests_failed"
    prose = turn.inner_text()
    assert "tests: 1 failed → round 2" in prose, prose
    panel = page.locator("#run-panel")
    assert panel.locator(".run-command").inner_text() == "pytest"
    assert "run by the model" in panel.locator(".run-by").inner_text()
    panel.locator(".run-end[data-status='failed']").wait_for(timeout=LIVE_WAIT_MS)
    assert "1 failed" in panel.locator(".run-output").inner_text()

    _ask(page, _fence("def add(a, b):\n    return a + b\n"))
    page.locator(".turn-foot[data-reason='tests_passed']").wait_for(timeout=3 * LIVE_WAIT_MS)
    wait_for_server_text(page, "app.py", "def add(a, b):\n    return a + b\n")
    panel.locator(".run-end[data-status='ok']").wait_for(timeout=LIVE_WAIT_MS)
