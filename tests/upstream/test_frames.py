"""Event normalisation: every documented frame shape, both error shapes, malformed input."""

from __future__ import annotations

import json

import pytest

from spark_ide.upstream.events import Usage
from spark_ide.upstream.frames import (
    Created,
    Delta,
    Done,
    ErrorFrame,
    MalformedFrame,
    Other,
    SteerAccepted,
    SteerFailed,
    parse_frame,
)


def frame(**fields: object) -> str:
    return json.dumps(fields)


def test_it_reads_a_text_delta() -> None:
    raw = frame(type="response.output_text.delta", delta="def ", item_id="m", output_index=0,
                content_index=0, sequence_number=4)
    assert parse_frame(raw) == Delta("def ")


def test_it_reads_the_response_id_from_created() -> None:
    raw = frame(type="response.created", response={"id": "resp_1", "status": "in_progress"})
    assert parse_frame(raw) == Created("resp_1")


def test_it_reads_completed_with_usage() -> None:
    raw = frame(type="response.completed",
                response={"id": "resp_1", "status": "completed",
                          "usage": {"input_tokens": 7, "output_tokens": 3}})
    assert parse_frame(raw) == Done("completed", "resp_1", usage=Usage(7, 3))


def test_it_reads_the_incomplete_reason() -> None:
    raw = frame(type="response.incomplete",
                response={"id": "r", "incomplete_details": {"reason": "max_output_tokens"}})
    assert parse_frame(raw) == Done("incomplete", "r", reason="max_output_tokens")


def test_it_reads_failed_with_its_error() -> None:
    raw = frame(type="response.failed",
                response={"id": "r", "error": {"code": "server_error", "message": "boom"}})
    assert parse_frame(raw) == Done("failed", "r", code="server_error", message="boom")


@pytest.mark.parametrize(
    ("status", "expected"),
    [("completed", Done("completed", "r")),
     ("cancelled", Done("incomplete", "r", reason="cancelled")),
     ("failed", Done("failed", "r", code="failed"))],
)
def test_it_treats_response_done_as_final(status: str, expected: Done) -> None:
    assert parse_frame(frame(type="response.done", response={"id": "r", "status": status})) \
        == expected


def test_it_reads_the_flat_error_shape() -> None:
    raw = frame(type="error", code="previous_response_not_found", message="gone", param="x")
    assert parse_frame(raw) == ErrorFrame("previous_response_not_found", "gone")


def test_it_reads_the_nested_error_shape() -> None:
    raw = frame(type="error", status=400,
                error={"type": "invalid_request_error",
                       "code": "websocket_connection_limit_reached", "message": "60 min"})
    assert parse_frame(raw) == ErrorFrame("websocket_connection_limit_reached", "60 min", 400)


def test_it_reads_steer_answers() -> None:
    assert parse_frame(frame(type="response.steer.accepted", response_id="r")) \
        == SteerAccepted("r")
    refused = frame(type="response.steer.failed",
                    error={"code": "previous_response_not_found", "message": "no"})
    assert parse_frame(refused) == SteerFailed("previous_response_not_found", "no")


def test_it_passes_unknown_event_types_through_as_other() -> None:
    assert parse_frame(frame(type="response.reasoning.delta", delta="x")) \
        == Other("response.reasoning.delta")


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        frame(kind="response.created"),
        frame(type=5),
        frame(type="response.output_text.delta", delta=None),
        frame(type="response.created", response={"status": "in_progress"}),
        frame(type="response.completed"),
        frame(type="response.done", response={"id": "r", "status": "exploded"}),
        b"\x00\x01",
    ],
)
def test_it_rejects_malformed_frames(raw: str | bytes) -> None:
    with pytest.raises(MalformedFrame):
        parse_frame(raw)
