"""Refused client messages. The codes are spelt out as they go on the wire: this is where the
server's spelling of them is checked (the rest of the tests use the names in
:mod:`spark_ide.responses_protocol`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spark_ide import responses_protocol as protocol

from .protocol_client import Client, client_for, running_server


async def error_for(ws: Client, frame: str | bytes) -> dict[str, Any]:
    await ws.socket.send(frame)
    error = await ws.recv()
    assert error["type"] == protocol.ERROR
    # The server keeps serving on the same socket.
    assert (await ws.run("[say]still here[/say]"))[-1]["type"] == protocol.COMPLETED
    return error


def create(**fields: Any) -> str:
    return json.dumps({"type": protocol.CREATE, **fields})


@pytest.mark.parametrize(
    ("frame", "code", "param"),
    [
        ("{not json", "invalid_json", None),
        (b"\xff\xfe", "invalid_json", None),
        ("[1, 2]", "invalid_json", None),
        ('{"model": "smollm2"}', "missing_required_parameter", "type"),
        ('{"type": 7}', "invalid_type", "type"),
        ('{"type": "session.update"}', "invalid_value", "type"),
        (create(input="hi"), "missing_required_parameter", "model"),
        (create(model=3, input="hi"), "invalid_type", "model"),
        (create(model="smollm2", input=5), "invalid_type", "input"),
        (
            create(model="smollm2", input=[{"type": "web_search_call"}]),
            "invalid_value",
            "input[0].type",
        ),
        (
            create(model="smollm2", input=[{"type": "function_call"}]),
            "missing_required_parameter",
            "input[0].call_id",
        ),
        (
            create(model="smollm2", input=[{"type": "apply_patch_call_output", "call_id": "c", "status": "ok"}]),
            "invalid_value",
            "input[0].status",
        ),
        (
            create(model="smollm2", input=[{"content": "x"}]),
            "missing_required_parameter",
            "input[0].role",
        ),
        (
            create(model="smollm2", input=[{"role": "tool", "content": "x"}]),
            "invalid_value",
            "input[0].role",
        ),
        (
            create(model="smollm2", input=[{"role": "user"}]),
            "missing_required_parameter",
            "input[0].content",
        ),
        (
            create(model="smollm2", input=[{"role": "user", "content": [{"type": "input_image"}]}]),
            "invalid_value",
            "input[0].content[0]",
        ),
        (create(model="smollm2", input="x", instructions=1), "invalid_type", "instructions"),
        (
            create(model="smollm2", input="x", reasoning={"effort": "max"}),
            "invalid_value",
            "reasoning.effort",
        ),
        (create(model="smollm2", input="x", reasoning="high"), "invalid_type", "reasoning"),
        (
            create(model="smollm2", input="x", max_output_tokens=0),
            "invalid_value",
            "max_output_tokens",
        ),
        (
            create(model="smollm2", input="x", max_output_tokens="9"),
            "invalid_type",
            "max_output_tokens",
        ),
        (create(model="smollm2", input="x", temperature=3), "invalid_value", "temperature"),
        (create(model="smollm2", input="x", store="yes"), "invalid_type", "store"),
        (create(model="smollm2", input="x", generate=0), "invalid_type", "generate"),
    ],
)
async def test_it_rejects_bad_client_messages(
    ws: Client, frame: str | bytes, code: str, param: str | None
) -> None:
    error = await error_for(ws, frame)
    assert error["status"] == 400
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["code"] == code
    assert error["error"]["param"] == param
    assert error["error"]["message"]


async def test_it_rejects_an_unknown_model_with_model_not_found(ws: Client) -> None:
    error = await error_for(ws, create(model="gpt-9", input="hi"))
    assert error["status"] == 404
    assert error["error"]["code"] == "model_not_found"
    assert error["error"]["param"] == "model"


async def test_it_accepts_any_configured_model_name() -> None:
    async with running_server(model=("smollm2", "local")) as server, client_for(server) as ws:
        await ws.send({"type": protocol.CREATE, "model": "local", "input": "[say]hi[/say]"})
        events = await ws.response()
    assert events[-1]["response"]["model"] == "local"


async def test_it_rejects_an_oversized_frame_and_keeps_the_socket() -> None:
    async with running_server(max_frame_bytes=1000) as server, client_for(server) as ws:
        error = await error_for(ws, create(model="smollm2", input="x" * 2000))
    assert error["status"] == 413
    assert error["error"]["code"] == "message_too_large"


async def test_it_tolerates_fields_it_does_not_use(ws: Client) -> None:
    events = await ws.run("[say]ok[/say]", tools=[], metadata={"a": "b"}, stream_id="lane-1")
    assert events[-1]["type"] == protocol.COMPLETED
