"""The tool-loop benchmark on the real stack at a tiny size: every round's calls are answered
in a chained request, every patch lands, and each round trip is timed between frames the tap
saw in that order. How short the round trip is, is the benchmark's figure, not this test's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.toolloop import ROUNDS, loop_file, main, patch, round_trips
from benchmarks.v4a import apply_reference
from spark_ide import responses_protocol as protocol


@pytest.mark.timeout(240)
def test_it_times_every_round_of_the_loop_and_checks_the_rounds_went_as_scripted() -> None:
    figures: Any = main(["--turns", "2", "--rate", "5000"])

    json.dumps(figures)  # the management command prints it as JSON
    assert figures["every_patch_applied"] is True
    assert figures["late_events"] == 0
    for side in ("ide", "bare"):
        trip = figures["round_trip"][side]
        assert trip["every_call_answered"] is True and trip["turns_as_scripted"] is True
        for span in ("from_last_delta_ms", "from_completed_ms"):
            values = trip[span]
            assert values["n"] == 2 * (ROUNDS - 1)
            ordered = [values["p50"], values["p90"], values["p99"], values["max"]]
            assert ordered == sorted(ordered) and values["p50"] > 0  # the request follows the frame it answers
        # The last delta passes the tap before the response's completed does.
        assert trip["from_last_delta_ms"]["p50"] >= trip["from_completed_ms"]["p50"]
    assert figures["sound"] is True
    rows = figures["rows"]
    assert rows[0]["met"] is True
    assert rows[1]["unit"] == "ms" and isinstance(rows[1]["met"], bool) and rows[1]["baseline"] is not None
    assert set(figures["charts"]["toolloop_round_trip_cdf"]["series"]) == {"IDE", "bare upstream client"}
    assert figures["setup"]["rounds_per_turn"] == ROUNDS


def test_each_round_s_patch_takes_the_file_one_number_on() -> None:
    files = {"loop.py": loop_file(6)}

    assert apply_reference(files, patch(6)) == {"loop.py": loop_file(7)}


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def test_a_round_trip_runs_from_the_frames_of_a_response_to_the_request_that_answers_its_calls() -> None:
    call = {"type": protocol.CUSTOM_TOOL_CALL, "call_id": "call_1"}
    answer = {"type": protocol.CUSTOM_TOOL_CALL_OUTPUT, "call_id": "call_1", "output": "ok"}
    events = [
        (1.000, True, _event(protocol.CUSTOM_TOOL_INPUT_DELTA, delta="+x")),
        (1.001, True, _event(protocol.CUSTOM_TOOL_INPUT_DONE)),
        (1.002, True, _event(protocol.COMPLETED, response={"id": "resp_1", "output": [call]})),
        (1.0025, False, _event(protocol.CREATE, input=[{"type": "message", "role": "user"}])),  # not an answer
        (1.004, False, _event(protocol.CREATE, previous_response_id="resp_1", input=[answer])),
        (1.010, True, _event(protocol.COMPLETED, response={"id": "resp_2", "output": []})),  # no calls: no trip
    ]

    [trip] = list(round_trips(events))

    assert trip.from_last_delta_ms == pytest.approx(4.0)
    assert trip.from_completed_ms == pytest.approx(2.0)
    assert trip.answered is True


def test_a_request_that_leaves_a_call_unanswered_or_breaks_the_chain_is_noted() -> None:
    calls = [{"type": protocol.CUSTOM_TOOL_CALL, "call_id": f"call_{n}"} for n in (1, 2)]
    answer = {"type": protocol.CUSTOM_TOOL_CALL_OUTPUT, "call_id": "call_1", "output": "ok"}
    events = [
        (1.0, True, _event(protocol.CUSTOM_TOOL_INPUT_DELTA, delta="+x")),
        (1.1, True, _event(protocol.COMPLETED, response={"id": "resp_1", "output": calls})),
        (1.2, False, _event(protocol.CREATE, previous_response_id="resp_1", input=[answer])),
    ]

    [trip] = list(round_trips(events))

    assert trip.answered is False


@pytest.mark.parametrize("argv", [["--turns", "0"], ["--rate", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
