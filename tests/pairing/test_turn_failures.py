"""Every way a turn can fail ends it the same way: a clear ``turn.finished`` with a reason,
its block in flight rolled back, the next queued prompt started. The model is the fake."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_ide.pairing import adapter
from spark_ide.upstream import Message, TurnStream, UpstreamError
from tests.pairing.conftest import FILES, Live, LiveClient, connect
from tests.support.fake_model import FakeModel

pytestmark = [pytest.mark.django_db(transaction=True)]

HALF_BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n'


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModel]:
    model = FakeModel()
    monkeypatch.setattr(adapter, "connect_entry", model.connect_entry)
    yield model


async def started(client: LiveClient, prompt: str) -> str:
    await client.send({"type": "prompt", "text": prompt})
    event = await client.until(lambda e: e["type"] == "turn.started" and e["prompt"] == prompt)
    return str(event["turn"])


async def finished(client: LiveClient, turn: str) -> dict[str, object]:
    return await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)


async def in_flight(client: LiveClient, stream: TurnStream, turn: str) -> None:
    """The model is half-way through an edit block that would change util.py."""
    stream.delta("Changing X.\n")
    stream.delta(HALF_BLOCK)
    await client.until(lambda e: e["type"] == "edit.status" and e["turn"] == turn and e["state"] == "streaming")


async def test_no_connection_at_start_fails_the_turn_and_the_next_prompt_tries_again(
    live: Live, fake_model: FakeModel, rooms: None
) -> None:
    fake_model.refuse.append(UpstreamError("provider_unavailable", "connection refused"))
    client = await connect(live)
    turn = await started(client, "first")
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == ("failed", "model_unavailable")
    assert "connection refused" in str(end["error"])
    second = await started(client, "second")
    stream = await fake_model.next_stream()
    stream.delta("ok\n")
    stream.complete(None)
    end = await finished(client, second)
    assert (end["status"], end["reason"]) == ("completed", "no_changes")
    assert fake_model.connects == 2  # the failed client was dropped, a new one made
    await client.close()


async def test_no_connection_while_steering_fails_the_new_turn_and_keeps_the_document(
    live: Live, fake_model: FakeModel, rooms: None
) -> None:
    client = await connect(live)
    turn = await started(client, "change X")
    stream = await fake_model.next_stream()
    await in_flight(client, stream, turn)
    fake_model.refuse.append(UpstreamError("provider_unavailable", "gone"))
    await client.send({"type": "steer", "text": "no, Y"})
    old = await finished(client, turn)
    assert (old["status"], old["reason"]) == ("steered", "steered")
    new = await client.until(lambda e: e["type"] == "turn.started" and e["steered_from"] == turn)
    end = await finished(client, str(new["turn"]))
    assert (end["status"], end["reason"]) == ("failed", "model_unavailable")
    assert fake_model.stopped == [stream]  # the old answer is not left running upstream
    await client.until_true(lambda: client.text("util.py") == FILES["util.py"])  # the half block went
    await client.close()


@pytest.mark.parametrize(
    ("ending", "status", "reason", "error"),
    [
        (lambda s: s.incomplete("max_output_tokens"), "completed", "incomplete", "max_output_tokens"),
        (lambda s: s.fail("server_error", "the model crashed"), "failed", "model_error", "the model crashed"),
        (lambda s: s.error("rate_limited", "slow down", retryable=True), "failed", "model_error", "slow down"),
        (lambda s: s.detach(), "failed", "no_answer", "ended without an answer"),
    ],
    ids=["incomplete", "failed", "error", "no-answer"],
)
async def test_a_turn_that_ends_badly_says_why_and_rolls_back_its_open_block(
    live: Live, fake_model: FakeModel, rooms: None, ending: object, status: str, reason: str, error: str
) -> None:
    client = await connect(live)
    turn = await started(client, "change X")
    stream = await fake_model.next_stream()
    await in_flight(client, stream, turn)
    ending(stream)  # type: ignore[operator]
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == (status, reason)
    assert error in str(end["error"])
    states = [e["state"] for e in client.of("edit.status", turn)]
    assert states[-1] in ("rolled_back", "failed")  # the unfinished block is not kept
    await client.until_true(lambda: client.text("util.py") == FILES["util.py"])
    await client.close()


async def test_a_non_retryable_error_drops_the_connection_for_a_new_one(
    live: Live, fake_model: FakeModel, rooms: None
) -> None:
    client = await connect(live)
    turn = await started(client, "one")
    (await fake_model.next_stream()).error("invalid_api_key", "bad key", retryable=False)
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == ("failed", "model_error")
    await started(client, "two")
    await fake_model.next_stream()
    assert fake_model.connects == 2
    assert fake_model.closed == 1
    await client.close()


class Exploding(TurnStream):
    async def __anext__(self) -> object:  # type: ignore[override]
        raise RuntimeError("a bug of ours")


async def test_an_internal_error_fails_the_turn_loudly_and_the_queue_goes_on(
    live: Live, fake_model: FakeModel, rooms: None, caplog: pytest.LogCaptureFixture
) -> None:
    client = await connect(live)
    turn = await started(client, "one")
    stream = await fake_model.next_stream()
    stream.__class__ = Exploding  # its next event, after the one it waits for now, raises
    await client.send({"type": "prompt", "text": "two"})  # queued: it must still run
    await client.until(lambda e: e["type"] == "turn.queued")
    stream.delta("x")
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == ("failed", "internal_error")
    assert "a bug of ours" in str(end["error"])
    assert "turn" in caplog.text and "failed" in caplog.text
    nxt = await client.until(lambda e: e["type"] == "turn.started" and e["prompt"] == "two")
    second = await fake_model.next_stream()
    second.complete(None)
    assert (await finished(client, str(nxt["turn"])))["status"] == "completed"
    await client.close()


async def test_stop_stops_the_generation_upstream(live: Live, fake_model: FakeModel, rooms: None) -> None:
    client = await connect(live)
    turn = await started(client, "one")
    stream = await fake_model.next_stream()
    await in_flight(client, stream, turn)
    await client.send({"type": "stop"})
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == ("cancelled", "stopped")
    assert fake_model.stopped == [stream]
    await client.close()


async def test_a_looping_answer_is_stopped_as_repetition(live: Live, fake_model: FakeModel, rooms: None) -> None:
    client = await connect(live)
    turn = await started(client, "one")
    stream = await fake_model.next_stream()
    stream.delta("Here is the plan.\n")
    for _ in range(30):
        stream.delta("Turn 2a3ff0b1a1e6: no edit blocks.\n")
    end = await finished(client, turn)
    assert (end["status"], end["reason"]) == ("cancelled", "repetition")
    assert "repeating" in str(end["error"])
    assert fake_model.stopped == [stream]  # and the model was stopped upstream
    text = "".join(e["text"] for e in client.of("turn.delta", turn))
    assert text.count("no edit blocks") < 30  # well before the end of the loop
    await client.close()


async def test_a_small_model_is_steered_with_a_plain_request_and_no_scaffolding(
    live: Live, fake_model: FakeModel, rooms: None, settings: Any
) -> None:
    settings.SPARK_EDIT_STYLE = "whole-file"
    settings.SPARK_MAX_OUTPUT_TOKENS = 321
    client = await connect(live)
    first = await started(client, "write a function that checks if a number is prime")
    stream = await fake_model.next_stream()
    stream.delta("Sure, here is")
    await client.until(lambda e: e["type"] == "turn.delta" and e["turn"] == first)
    await client.send({"type": "steer", "text": "stop, instead write a function that reverses a string"})
    await client.until(lambda e: e["type"] == "turn.started" and e["steered_from"] == first)
    (await fake_model.next_stream()).complete(None)
    steered = fake_model.requests[-1]
    message = steered.input[-1]
    assert isinstance(message, Message)
    text = message.text
    assert "Request: stop, instead write a function that reverses a string" in text
    for scaffolding in ("redirects you", "Your edits so far", "interrupted", "Blocks marked applied", "prime"):
        assert scaffolding not in text
    assert "app.py" in text  # the current files are its context
    assert steered.max_output_tokens == 321
    await client.close()


async def test_a_capable_model_is_re_prompted_with_its_partial_answer_and_ledger(
    live: Live, fake_model: FakeModel, rooms: None
) -> None:
    client = await connect(live)
    first = await started(client, "change X")
    stream = await fake_model.next_stream()
    await in_flight(client, stream, first)
    await client.send({"type": "steer", "text": "make it 3"})
    await client.until(lambda e: e["type"] == "turn.started" and e["steered_from"] == first)
    (await fake_model.next_stream()).complete(None)
    message = fake_model.requests[-1].input[-1]
    assert isinstance(message, Message)
    text = message.text
    assert "Request: change X" in text and "The user redirects you: make it 3" in text
    assert "Changing X." in text  # the interrupted answer
    assert "rolled back" in text or "rolled_back" in text  # its ledger
    await client.close()


async def test_a_small_model_gets_the_files_not_past_answers_and_a_stable_prefix(
    live: Live, fake_model: FakeModel, rooms: None, settings: Any
) -> None:
    settings.SPARK_EDIT_STYLE = "whole-file"
    client = await connect(live)
    for prompt in ("one", "two", "three"):
        await client.send({"type": "prompt", "text": prompt, "path": "app.py"})
        turn = (await client.until(lambda e, p=prompt: e["type"] == "turn.started" and e["prompt"] == p))["turn"]
        stream = await fake_model.next_stream()
        stream.delta(f"answer {prompt}\n")
        stream.complete(None)
        await finished(client, turn)
    last = fake_model.requests[-1]
    (message,) = last.conversation
    assert isinstance(message, Message) and message.role == "user"  # no past turns: the files tell
    text = message.text
    # The active file comes last, so what precedes it matches the last request (llama's cache).
    assert text.index('<file path="util.py">') < text.index('<file path="app.py">') < text.index("Request: three")
    await client.close()
