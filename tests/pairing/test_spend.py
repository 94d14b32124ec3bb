"""Usage and spend through the whole stack (issue 34; docs/models.md "Spend"): the session
socket, the real Pilot and database, and OpenAI's Responses socket faked in its exact shapes
(``tests.support.responses_socket``: the ``usage`` of each response is the test's). The
model's prices come with its catalogue entry (``models.toml``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from spark_ide.pairing.models import Turn
from spark_ide.upstream.catalogue import Prices
from tests.ops.test_metrics import moved, own_metrics  # noqa: F401  (own_metrics: a fixture)
from tests.pairing.conftest import Live, connect
from tests.support.responses_socket import ResponsesSocket, message

pytestmark = [pytest.mark.django_db(transaction=True)]

MODEL = "gpt-test"
PRICES = Prices(input=Decimal("2.50"), cached_input=Decimal("0.25"), output=Decimal("10"))
USAGE = {"input_tokens": 1_200, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 50,
         "total_tokens": 1_250}
COST = Decimal("0.0017")  # (400 at $2.50 + 800 at $0.25 + 50 at $10) per million


async def recorded(turn: str) -> Turn:
    """The turn's record once its end is written (off the turn's way, after turn.finished)."""
    async with asyncio.timeout(10):
        while True:
            ended = Turn.objects.filter(pk=turn, finished_at__isnull=False)
            row: Turn | None = await database_sync_to_async(ended.first)()
            if row is not None:
                return row
            await asyncio.sleep(0.02)


@pytest.fixture
async def fake(
    monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path,
) -> AsyncIterator[ResponsesSocket]:
    """The IDE's model is OpenAI's socket, faked: the catalogue's one entry, with ``PRICES``."""
    async with ResponsesSocket() as socket:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        catalogue = tmp_path / "models.toml"
        catalogue.write_text(
            f'[[models]]\nname = "{MODEL}"\nprovider = "openai"\nbase_url = "{socket.base_url}"\n'
            f'model = "{MODEL}"\nprices = {{ input = {PRICES.input}, cached_input = {PRICES.cached_input}, '
            f'output = {PRICES.output} }}\n'
        )
        settings.SPARK_MODELS_FILE = str(catalogue)
        yield socket


async def test_the_providers_usage_lands_in_the_event_the_record_the_page_and_the_metrics(
    live: Live, fake: ResponsesSocket, rooms: None, own_metrics: Any,  # noqa: F811
) -> None:
    fake.usage = USAGE
    before = await own_metrics()
    client = await connect(live)
    fake.answer(message("Fine, nothing to change.\n"))
    await client.send({"type": "prompt", "text": "anything to change?"})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["usage"] == {
        "input_tokens": 1_200, "cached_input_tokens": 800, "output_tokens": 50, "estimated": False,
        "cost_usd": str(COST),
    }
    assert finished["session_usage"] == finished["usage"]
    assert finished["metrics"]["tokens"] == 50
    row = await recorded(finished["turn"])
    assert (row.input_tokens, row.cached_input_tokens, row.output_tokens) == (1_200, 800, 50)
    assert not row.usage_estimated
    assert row.cost_usd == COST
    after = await own_metrics()
    for kind, count in (("input", 1_200), ("cached_input", 800), ("output", 50)):
        assert moved(before, after, "spark_tokens_total", model=MODEL, kind=kind) == count
    assert moved(before, after, "spark_cost_usd_total", model=MODEL) == pytest.approx(float(COST))
    # A second turn: the session's totals count both (the first one's record written or not).
    fake.answer(message("Still fine.\n"))
    await client.send({"type": "prompt", "text": "and now?"})
    second = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != finished["turn"])
    assert second["session_usage"]["input_tokens"] == 2_400
    assert second["session_usage"]["cost_usd"] == str(2 * COST)
    await client.close()
    # The page drawn now starts from those totals (turn.finished updates them after).
    browser = AsyncClient()
    await browser.aforce_login(live.owner)
    page = (await browser.get(f"/sessions/{live.session_id}/")).content.decode()
    assert "session 2,500 tok · $0.0034</span>" in page
    await recorded(second["turn"])
    listed = (await browser.get(f"/api/sessions/{live.session_id}/turns")).json()
    assert [turn["usage"] for turn in listed] == [finished["usage"], second["usage"]]


async def test_a_response_without_usage_is_estimated_and_marked(
    live: Live, fake: ResponsesSocket, rooms: None,
) -> None:
    fake.usage = None
    client = await connect(live)
    answer = "An answer the provider did not count.\n"
    fake.answer(message(answer))
    await client.send({"type": "prompt", "text": "count me"})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    usage = finished["usage"]
    assert usage["estimated"] is True and usage["cached_input_tokens"] == 0
    assert usage["input_tokens"] > 0 and usage["output_tokens"] == finished["metrics"]["tokens"] > 0
    row = await recorded(finished["turn"])
    assert row.usage_estimated and row.input_tokens == usage["input_tokens"]
    assert row.cost_usd == Decimal(usage["cost_usd"]) > 0
    await client.close()


async def test_the_daily_budget_stops_a_streaming_turn_and_refuses_the_next(
    live: Live, fake: ResponsesSocket, rooms: None, settings: Any,
) -> None:
    settings.SPARK_DAILY_BUDGET_USD = Decimal("0.001")  # 100 output tokens at $10 a million
    fake.usage = None
    fake.pace_s = 0.001
    client = await connect(live)
    fake.answer(message("word " * 1_000))
    await client.send({"type": "prompt", "text": "talk a lot"})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert (finished["status"], finished["reason"]) == ("cancelled", "budget_exhausted")
    assert "of your $0.0010 daily AI budget" in finished["error"]
    assert Decimal(finished["usage"]["cost_usd"]) >= Decimal("0.001")
    assert len("".join(e["text"] for e in client.of("turn.delta"))) < 2_000  # stopped long before its end
    await client.send({"type": "prompt", "text": "once more"})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "budget_exhausted"
    assert error["message"].startswith("you have spent $0.00")
    assert error["message"].endswith("of your $0.0010 daily AI budget; it starts again at 00:00 UTC")
    assert len(client.of("turn.started")) == 1 and len(fake.requests) == 1
    await client.close()
