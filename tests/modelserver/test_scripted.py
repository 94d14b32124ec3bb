from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import CancelToken, EngineError, Job, Message, MessageStart, Piece, Tally
from spark_ide.modelserver.engines.scripted import (
    ScriptedEngine,
    count_tokens,
    load_scripts,
    split_tokens,
)
from spark_ide.modelserver.script import Say

from .protocol_client import client_for, running_server, text_of


def job(text: str) -> Job:
    return Job(messages=(Message("system", "rules"), Message("user", text)))


@given(st.text())
def test_tokens_are_at_most_four_characters_and_rebuild_the_text(text: str) -> None:
    tokens = split_tokens(text)
    assert "".join(tokens) == text
    assert all(1 <= len(token) <= 4 for token in tokens)


@given(st.text())
def test_counting_tokens_agrees_with_splitting(text: str) -> None:
    assert count_tokens(text) == len(split_tokens(text))


def test_tokens_break_at_whitespace() -> None:
    assert split_tokens("a bc defgh") == ["a", " bc", " def", "gh"]


def test_it_plans_a_say_block_across_lines() -> None:
    plan = ScriptedEngine().plan(job("x [say]line one\nline [rate:5] two[/say] y"))
    assert plan.steps == (Say("line one\nline [rate:5] two"),)
    assert plan.tokens_per_s == 1000.0


def test_it_plans_a_named_script_with_rate_and_ttft() -> None:
    engine = ScriptedEngine(scripts={"edit": "<write>"}, tokens_per_s=10, ttft_s=0.5)
    plan = engine.plan(job("[script:edit] [rate:2500] [ttft:0]"))
    assert (plan.steps, plan.tokens_per_s, plan.ttft_s) == ((Say("<write>"),), 2500.0, 0.0)


def test_it_reads_the_last_user_message() -> None:
    conversation = Job(messages=(Message("user", "[say]old[/say]"), Message("user", "plain")))
    assert ScriptedEngine(default_text="fallback").plan(conversation).steps == (Say("fallback"),)


@pytest.mark.parametrize("text", ["[rate:fast]", "[rate:0]", "[ttft:-1]", "[rate:inf]"])
def test_it_rejects_bad_directives(text: str) -> None:
    with pytest.raises(EngineError) as refused:
        ScriptedEngine().plan(job(text))
    assert refused.value.code == "invalid_directive"


def test_it_rejects_an_unknown_script() -> None:
    with pytest.raises(EngineError) as refused:
        ScriptedEngine().plan(job("[script:nope]"))
    assert refused.value.code == "script_not_found"


@pytest.mark.parametrize(("rate", "ttft"), [(0, 0.0), (-1, 0.0), (10, -0.1)])
def test_it_rejects_bad_settings(rate: float, ttft: float) -> None:
    with pytest.raises(ValueError, match="must"):
        ScriptedEngine(tokens_per_s=rate, ttft_s=ttft)


def test_it_loads_a_script_file(tmp_path: Path) -> None:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"hello": "Hello!", "bye": "Bye."}))
    assert load_scripts(path) == {"hello": "Hello!", "bye": "Bye."}


@pytest.mark.parametrize("content", ['["a"]', '{"a": 1}'])
def test_it_rejects_a_bad_script_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "scripts.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=r"JSON object of name -> script|a script is a string"):
        load_scripts(path)


async def test_an_unknown_script_fails_the_response() -> None:
    async with running_server() as server, client_for(server) as ws:
        events = await ws.run("[script:missing]")
    final = events[-1]
    assert final["type"] == protocol.FAILED
    assert final["response"]["status"] == "failed"
    assert final["response"]["error"]["code"] == "script_not_found"


async def test_it_stops_at_max_output_tokens() -> None:
    async with running_server() as server, client_for(server) as ws:
        events = await ws.run("[say]one two three four five[/say]", max_output_tokens=2)
    final = events[-1]
    assert final["type"] == protocol.INCOMPLETE
    assert final["response"]["incomplete_details"] == {"reason": protocol.MAX_OUTPUT_TOKENS}
    assert final["response"]["usage"]["output_tokens"] == 2
    assert text_of(events) == "one two"
    assert events[-2]["type"] == protocol.OUTPUT_ITEM_DONE
    assert events[-2]["item"]["status"] == "incomplete"


async def test_it_plays_fifty_thousand_tokens_per_second_exactly() -> None:
    text = "abcd" * 5000
    engine = ScriptedEngine(scripts={"big": text}, tokens_per_s=50_000, ttft_s=0.0)
    async with running_server(engine) as server, client_for(server) as ws:
        events = await ws.run("[script:big]")
    assert text_of(events) == text
    assert events[-1]["response"]["usage"]["output_tokens"] == 5000


async def test_it_hands_over_every_due_token_in_one_piece() -> None:
    # At a million tokens/s many tokens fall due between two wake-ups of the generator.
    engine = ScriptedEngine(scripts={"big": "abcd" * 2000}, tokens_per_s=1e6, ttft_s=0.0)
    tally = Tally()
    outputs = [p async for p in engine.generate(job("[script:big]"), tally, CancelToken())]
    assert outputs[0] == MessageStart()
    pieces = [p for p in outputs[1:] if isinstance(p, Piece)]
    assert len(pieces) == len(outputs) - 1
    assert sum(p.tokens for p in pieces) == tally.output_tokens == 2000
    assert "".join(p.text for p in pieces) == "abcd" * 2000
    assert max(p.tokens for p in pieces) > 1
    assert all(len(p.text) == 4 * p.tokens for p in pieces)


async def test_it_stops_when_the_token_is_cancelled() -> None:
    engine = ScriptedEngine(tokens_per_s=10.0, ttft_s=0.0)
    cancel = CancelToken()
    pieces = []
    async for piece in engine.generate(job("[say]one two three four[/say]"), Tally(), cancel):
        if isinstance(piece, Piece):
            pieces.append(piece)
            cancel.cancel()
    assert [p.text for p in pieces] == ["one"]


@pytest.mark.parametrize(
    ("text", "played"),
    [
        ("[say]first[/say] then [say]second[/say]", "second"),
        ("[script:a] then [script:b]", "B"),
        ("[script:a] then [say]steered[/say]", "steered"),
        ("[say]original[/say] then [script:b]", "B"),
        ("[say]mentions [script:a] inside[/say]", "mentions [script:a] inside"),
    ],
)
def test_the_last_text_directive_wins(text: str, played: str) -> None:
    engine = ScriptedEngine(scripts={"a": "A", "b": "B"})
    assert engine.plan(job(text)).steps == (Say(played),)


def test_the_last_rate_and_ttft_win() -> None:
    plan = ScriptedEngine().plan(job("[rate:10][ttft:5] steer: [rate:2000][ttft:0]"))
    assert (plan.tokens_per_s, plan.ttft_s) == (2000.0, 0.0)


def test_a_plain_follow_up_goes_on_with_a_script_the_model_has_begun() -> None:
    engine = ScriptedEngine(scripts={"two": ["first", "second"]}, default_text="fallback")
    begun = Job(messages=(
        Message("user", "[script:two]"), Message("assistant", "first"), Message("user", "the tests fail"),
    ))
    assert engine.plan(begun).steps == (Say("second"),)
    done = Job(messages=(*begun.messages, Message("assistant", "second"), Message("user", "plain")))
    assert engine.plan(done).steps == (Say("fallback"),)  # its rounds are over: the default again


async def test_a_cancel_token_wakes_its_waiter_at_once() -> None:
    token = CancelToken()
    waiting = asyncio.ensure_future(token.wait(10.0))
    await asyncio.sleep(0)
    token.cancel()
    assert await asyncio.wait_for(waiting, 1.0) is True
    assert await token.wait(10.0) is True  # already cancelled: no wait


async def test_a_cancel_token_times_out_false_and_a_past_deadline_still_yields() -> None:
    token = CancelToken()
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await token.wait(0.02) is False
    assert loop.time() - began >= 0.02
    assert await token.wait_until(began) is False


async def test_the_time_to_first_token_counts_from_when_the_engine_takes_the_job() -> None:
    """Reading the prompt is part of the TTFT: the first piece comes ``ttft`` after the engine
    began, however long the prompt took to read, not that long plus ``ttft``."""
    engine = ScriptedEngine(ttft_s=0.05)
    loop = asyncio.get_running_loop()
    slow_plan = engine.plan

    def plan(job: Job):  # type: ignore[no-untyped-def]
        time.sleep(0.03)  # a prompt that takes 30 ms to read
        return slow_plan(job)

    engine.plan = plan  # type: ignore[method-assign]
    began = loop.time()
    outputs = engine.generate(job("[say]hi[/say]"), Tally(), CancelToken())
    assert isinstance(await anext(outputs), MessageStart)
    first = await anext(outputs)
    took = loop.time() - began
    await outputs.aclose()
    assert isinstance(first, Piece)
    assert 0.05 <= took < 0.075
