"""Usage and spend in the Pilot (issue 34; docs/models.md "Spend"): a turn's tokens from the
provider's usage (or estimated), its cost by the model's prices, the session's totals, and
the money budgets (a person's daily one, a course's) refusing a turn and stopping one that
streams. The model's prices come with its catalogue entry (``LiveSettings.model_entry``)."""

from __future__ import annotations

from decimal import Decimal

from spark_ide.live.events import ErrorCode, TurnFinished, TurnStarted
from spark_ide.live.policy import AiPolicy
from spark_ide.live.usage import TurnUsage, request_tokens
from spark_ide.upstream import Usage
from spark_ide.upstream.catalogue import ModelEntry, Prices
from tests.live.test_pilot_rounds import FILES as ROUND_FILES
from tests.live.test_pilot_rounds import FIX_SUB, TOOLS, patch_call
from tests.support.fake_model import play_tool_call
from tests.support.memory_store import MemoryRoomStore
from tests.support.pilot_rig import pilot_rig
from tests.support.waits import eventually

FILES = {"util.py": "X = 1\n"}
# USD per million tokens: fresh input, cached input, output.
PRICES = Prices(input=Decimal("2.50"), cached_input=Decimal("0.25"), output=Decimal("10"))
ENTRY = ModelEntry(name="gpt-test", provider="openai", base_url="https://api.example.org/v1", model="gpt-test",
                   prices=PRICES)
PER_OUTPUT_TOKEN = Decimal("0.00001")  # PRICES.output per token


def cost(input_tokens: int, cached: int, output: int) -> Decimal:
    return (Decimal(input_tokens - cached) * PRICES.input + Decimal(cached) * PRICES.cached_input
            + Decimal(output) * PRICES.output) / Decimal(1_000_000)


async def test_the_providers_usage_is_the_turns_and_its_cost_is_by_the_prices() -> None:
    async with pilot_rig(FILES, model_entry=ENTRY) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.delta("Fine.")
        stream.complete(Usage(input_tokens=1_000, output_tokens=50, cached_input_tokens=600))
        finished = await rig.finished(turn)
        expected = cost(1_000, 600, 50)
        assert expected == Decimal("0.00165")
        assert finished.usage == {
            "input_tokens": 1_000, "cached_input_tokens": 600, "output_tokens": 50, "estimated": False,
            "cost_usd": "0.00165",
        }
        assert finished.metrics["tokens"] == 50
        assert finished.session_usage == finished.usage
        await rig.recorded(turn)
        outcome = rig.store.turns[turn].outcome
        assert outcome is not None and outcome.usage == TurnUsage(1_000, 600, 50, False, expected)
        # The session's totals add the next turn to it.
        second = rig.prompt("two")
        stream = await rig.model.next_stream()
        stream.complete(Usage(input_tokens=2_000, output_tokens=10, cached_input_tokens=0))
        done = await rig.finished(second)
        assert done.session_usage is not None
        assert (done.session_usage["input_tokens"], done.session_usage["output_tokens"]) == (3_000, 60)
        assert done.session_usage["cost_usd"] == str(expected + cost(2_000, 0, 10))


async def test_a_turn_of_several_rounds_adds_them_up_and_estimates_one_the_provider_did_not_count() -> None:
    async with pilot_rig(ROUND_FILES, style=TOOLS, model_entry=ENTRY) as rig:
        turn = rig.prompt("make sub subtract")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_1", FIX_SUB), [FIX_SUB])
        first.complete(Usage(input_tokens=500, output_tokens=40, cached_input_tokens=100))
        second = await rig.model.next_stream()
        second.delta("Done.")
        second.complete(Usage(input_tokens=700, output_tokens=2, cached_input_tokens=500))
        finished = await rig.finished(turn)
        assert finished.usage == TurnUsage(1_200, 600, 42, False, cost(500, 100, 40) + cost(700, 500, 2)).payload()
        # Stopped in its second round: that round has no count from the provider, and is estimated.
        turn = rig.prompt("again")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_2", FIX_SUB), [FIX_SUB])
        first.complete(Usage(input_tokens=500, output_tokens=40))
        second = await rig.model.next_stream()
        second.delta("Half an answ")
        await rig.delta_seen(turn, "Half an answ")
        rig.stop()
        usage = TurnUsage.from_payload((await rig.finished(turn)).usage)
        (_, _, _, request) = rig.model.requests
        assert usage.estimated
        assert usage.input_tokens == 500 + request_tokens(request)
        assert usage.output_tokens == 40 + 3  # 12 characters: 3 tokens


async def test_a_turn_without_the_providers_usage_is_estimated() -> None:
    async with pilot_rig(FILES, model_entry=ENTRY) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        answer = "A plain answer with no count from the provider.\n"
        stream.delta(answer)
        stream.complete(None)
        finished = await rig.finished(turn)
        (request,) = rig.model.requests
        usage = TurnUsage.from_payload(finished.usage)
        assert usage.estimated
        assert usage.input_tokens == request_tokens(request) > 0
        assert usage.output_tokens == finished.metrics["tokens"] == len(answer) // 4  # 4 characters a token
        assert usage.cost_usd == cost(usage.input_tokens, 0, usage.output_tokens)


async def test_a_model_without_prices_counts_tokens_and_no_cost() -> None:
    async with pilot_rig(FILES, daily_budget_usd=Decimal("0")) as rig:
        turn = rig.prompt("one")
        await eventually(lambda: bool(rig.replies) or bool(rig.model.requests))
        # A budget of 0 is spent before anything: refused, however cheap the model.
        assert [reply.code for reply in rig.replies] == [ErrorCode.BUDGET_EXHAUSTED]
    async with pilot_rig(FILES) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.complete(Usage(input_tokens=100, output_tokens=7))
        finished = await rig.finished(turn)
        assert finished.usage is not None and finished.usage["cost_usd"] is None
        assert finished.usage["output_tokens"] == 7


async def test_a_spent_daily_budget_refuses_the_next_prompt_and_says_how_much_of_what() -> None:
    store = MemoryRoomStore(files=dict(FILES))
    async with pilot_rig(FILES, store=store, model_entry=ENTRY, daily_budget_usd=Decimal("0.01")) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        stream.complete(Usage(input_tokens=4_000, output_tokens=1_000))  # $0.02
        await rig.finished(turn)
        rig.prompt("two")  # its record may not be written yet: it counts all the same
        await eventually(lambda: bool(rig.replies))
        (reply,) = rig.replies
        assert reply.code == ErrorCode.BUDGET_EXHAUSTED
        assert reply.message == "you have spent $0.0200 of your $0.0100 daily AI budget"
        assert len(rig.published.of(TurnStarted)) == 1
        # Someone else's spend is theirs: another person's prompt runs.
        other = rig.prompt("three", user_id=8, author="bo")
        stream = await rig.model.next_stream()
        stream.complete(Usage(input_tokens=10, output_tokens=1))
        assert (await rig.finished(other)).status == "completed"


async def test_a_turn_passing_the_daily_budget_while_it_streams_is_stopped() -> None:
    async with pilot_rig(FILES, model_entry=ENTRY, daily_budget_usd=Decimal("0.01")) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        for index in range(2_000):  # about 1,000 output tokens would be $0.01
            stream.delta(f"w{index} ")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("cancelled", "budget_exhausted")
        assert finished.error.startswith("you have spent $0.01") and "daily AI budget" in finished.error
        assert rig.model.stopped == [stream]
        usage = TurnUsage.from_payload(finished.usage)
        # Stopped within the step that passed it (at most MERGED_CHARS, 128 tokens' worth).
        assert usage.estimated and Decimal("0.01") <= usage.cost < Decimal("0.01") + 129 * PER_OUTPUT_TOKEN


async def test_a_courses_money_budget_refuses_a_prompt_and_stops_a_streaming_turn() -> None:
    spent = AiPolicy(budget_usd=Decimal("0.50"), cost_used=Decimal("0.50"))
    async with pilot_rig(FILES, policy=spent, model_entry=ENTRY) as rig:
        rig.prompt("one")
        await eventually(lambda: bool(rig.replies))
        assert rig.replies[0].code == ErrorCode.BUDGET_EXHAUSTED
        assert rig.replies[0].message == "you have spent $0.5000 of your $0.5000 AI budget for this course"
        assert rig.model.requests == []
    nearly = AiPolicy(budget_usd=Decimal("0.50"), cost_used=Decimal("0.495"))
    async with pilot_rig(FILES, policy=nearly, model_entry=ENTRY) as rig:
        turn = rig.prompt("one")
        stream = await rig.model.next_stream()
        for index in range(2_000):
            stream.delta(f"w{index} ")
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("cancelled", "budget_exhausted")
        assert "AI budget for this course" in finished.error
        assert rig.model.stopped == [stream]
        assert isinstance(finished, TurnFinished)
