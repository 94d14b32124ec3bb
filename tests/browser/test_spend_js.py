"""What the page says of a turn's spend (static/src/live/spend.js), from turn.finished's
``usage`` and ``session_usage``: the same money words as the server's pages (live.usage.usd)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from spark_ide.live.usage import TurnUsage, usd
from tests.support.node import run_node

MODULE = (Path(__file__).resolve().parents[2] / "static/src/live/spend.js").as_uri()

SCRIPT = """
const { usd, usageText, sessionText, costText } = await import(MODULE);
console.log(JSON.stringify({
  money: AMOUNTS.map(usd),
  turn: USAGES.map(usageText),
  session: USAGES.map(sessionText),
  cost: USAGES.map(costText),
}));
"""

COUNTED = TurnUsage(1_200, 800, 50, False, Decimal("0.0017")).payload()
ESTIMATED = TurnUsage(12_345, 0, 678, True, None).payload()


def test_the_page_says_tokens_and_cost_as_the_server_does() -> None:
    amounts = ["0.0017", "0.5", "1", "1234.5", "0"]
    result: dict[str, Any] = run_node(SCRIPT, MODULE=MODULE, AMOUNTS=amounts, USAGES=[COUNTED, ESTIMATED, None])
    assert result["money"] == [usd(Decimal(amount)) for amount in amounts]
    assert result["turn"] == ["1,200 in (800 cached) · 50 out · $0.0017", "≈12,345 in · ≈678 out", ""]
    assert result["session"] == ["session 1,250 tok · $0.0017", "session ≈13,023 tok", None]
    assert result["cost"] == ["turn $0.0017", "", ""]
