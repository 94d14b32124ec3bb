"""The live page's spend (issue 34; docs/models.md "Spend"): after real turns on the scripted
model, a turn's footer and the status bar say the tokens ``turn.finished`` carried, and the
session's totals count every turn (the local model has no price: no cost is shown)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import IdeServer, open_new_workspace
from tests.browser.test_latency_panel import RECORD, _finished
from tests.browser.test_live_pairing import _ask

pytestmark = pytest.mark.browser

WAIT_MS = 20_000


def test_the_footer_and_the_status_bar_say_the_turns_and_the_sessions_tokens(
    ide_server: IdeServer, page: Any,
) -> None:
    open_new_workspace(ide_server, page, "spend")
    page.evaluate(RECORD)
    _ask(page, "Say hello\n[rate:2000][say]Hello! A quick answer.[/say]")
    (first,) = _finished(page, 1)
    usage = first["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0 and usage["cost_usd"] is None
    footer = page.locator(f"article.turn[data-turn='{first['turn']}'] .turn-foot .usage")
    footer.wait_for(timeout=WAIT_MS)
    assert footer.inner_text() == f"{usage['input_tokens']:,} in · {usage['output_tokens']:,} out"
    bar = page.locator(".statusbar [data-field=session]")
    assert bar.inner_text() == f"session {usage['input_tokens'] + usage['output_tokens']:,} tok"
    assert page.locator(".statusbar [data-field=cost]").inner_text() == ""  # no price, no cost
    _ask(page, "Again\n[rate:2000][say]Another answer.[/say]")
    second = _finished(page, 2)[1]
    total = second["session_usage"]
    assert total["input_tokens"] == usage["input_tokens"] + second["usage"]["input_tokens"]
    said = f"session {total['input_tokens'] + total['output_tokens']:,} tok"
    page.locator(".statusbar [data-field=session]", has_text=said).wait_for(timeout=WAIT_MS)
    # A page drawn now starts from the same totals, from the turns' records.
    page.reload()
    page.locator(".statusbar [data-field=session]", has_text=said).wait_for(timeout=WAIT_MS)
