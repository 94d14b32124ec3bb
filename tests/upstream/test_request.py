"""Request bodies: chained vs full context, warm-up, steer, Chat Completions, effort."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spark_ide.upstream import Message, TurnRequest, UpstreamError, profile_for
from spark_ide.upstream.request import (
    ResponsesEncoder,
    chat_completion,
    responses_create,
    responses_steer,
    responses_warmup,
)

OPENAI = profile_for("openai", "gpt-x")
LOCAL = profile_for("local", "smollm2")
CHAT = profile_for("openai-compatible", "llama")
HISTORY = (Message("user", "first"), Message("assistant", "done"))
NEW = (Message("user", "second"),)


def request(**kwargs: object) -> TurnRequest:
    fields: dict[str, object] = {"instructions": "be brief", "input": NEW,
                                 "full_context": HISTORY + NEW}
    fields.update(kwargs)
    return TurnRequest(**fields)  # type: ignore[arg-type]


def texts(body: dict[str, object]) -> list[object]:
    items = body["input"]
    assert isinstance(items, list)
    return [item["content"] for item in items]


def test_it_chains_with_only_the_new_input() -> None:
    body = responses_create(request(previous_response_id="resp_1"), model="m", profile=OPENAI,
                            store=False, chain=True)
    assert body["type"] == "response.create"
    assert body["previous_response_id"] == "resp_1"
    assert texts(body) == ["second"]
    assert body["store"] is False
    assert "stream" not in body and "background" not in body


def test_it_sends_the_full_context_when_not_chaining() -> None:
    body = responses_create(request(previous_response_id="resp_1"), model="m", profile=OPENAI,
                            store=False, chain=False)
    assert "previous_response_id" not in body
    assert texts(body) == ["first", "done", "second"]


def test_it_uses_the_input_as_context_when_no_full_context_is_given() -> None:
    body = responses_create(request(full_context=()), model="m", profile=OPENAI, store=False,
                            chain=False)
    assert texts(body) == ["second"]


@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh"])
def test_it_maps_effort_to_reasoning_effort_for_openai(effort: str) -> None:
    body = responses_create(request(effort=effort), model="m", profile=OPENAI, store=False,
                            chain=False)
    assert body["reasoning"] == {"effort": effort}


def test_it_drops_effort_where_the_profile_has_no_reasoning() -> None:
    body = responses_create(request(effort="high"), model="m", profile=LOCAL, store=False,
                            chain=False)
    assert "reasoning" not in body
    assert "reasoning_effort" not in chat_completion(request(effort="high"), model="m",
                                                     profile=CHAT)


def test_it_warms_up_without_generating() -> None:
    body = responses_warmup(model="m", instructions="edit format", store=False)
    assert body["generate"] is False
    assert body["input"] == []
    assert body["instructions"] == "edit format"


def test_it_steers_the_running_response_with_the_new_input() -> None:
    assert responses_steer(request(), "resp_9") == {
        "type": "response.steer", "previous_response_id": "resp_9",
        "input": [{"type": "message", "role": "user", "content": "second"}],
    }


def test_it_builds_a_streaming_chat_completion_with_a_system_message() -> None:
    body = chat_completion(request(max_output_tokens=64), model="llama", profile=CHAT)
    assert body["stream"] is True
    assert body["max_tokens"] == 64
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "second"},
    ]


@pytest.mark.parametrize(
    "kwargs",
    [{"input": ()}, {"effort": "extreme"}, {"max_output_tokens": 0}],
)
def test_it_rejects_bad_turns(kwargs: dict[str, object]) -> None:
    with pytest.raises(UpstreamError) as caught:
        request(**kwargs)
    assert caught.value.code == "bad_request"


@pytest.mark.parametrize("chain", [True, False])
@pytest.mark.parametrize("fields", [
    {"previous_response_id": "resp_1"}, {"effort": "high", "max_output_tokens": 50, "metadata": {"turn": "t1"}},
    {"full_context": ()},
])
def test_the_encoder_writes_the_message_responses_create_makes(chain: bool, fields: dict[str, object]) -> None:
    encoder = ResponsesEncoder()
    for _ in range(2):  # the second time from the items it kept
        sent = encoder.create(request(**fields), model="m", profile=OPENAI, store=False, chain=chain)
        assert json.loads(sent) == responses_create(request(**fields), model="m", profile=OPENAI, store=False,
                                                    chain=chain)


def test_the_encoder_encodes_each_item_once_while_the_next_request_carries_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[object] = []
    dumps = json.dumps

    def counted(value: Any, **kwargs: Any) -> str:
        if isinstance(value, dict) and value.get("type") == "message":
            encoded.append(value["content"])
        return dumps(value, **kwargs)

    monkeypatch.setattr(json, "dumps", counted)
    encoder = ResponsesEncoder()
    encoder.create(request(), model="m", profile=OPENAI, store=False, chain=False)
    assert encoded == ["first", "done", "second"]
    encoded.clear()
    steer = (Message("user", "second, steered"),)
    encoder.create(request(input=steer, full_context=HISTORY + steer), model="m", profile=OPENAI, store=False,
                   chain=False)
    assert encoded == ["second, steered"]  # the history as it was encoded for the last request
    encoded.clear()
    encoder.create(request(input=NEW, full_context=NEW), model="m", profile=OPENAI, store=False, chain=False)
    assert encoded == ["second"]  # only the last request's items are kept
