"""The run-loop benchmark on the real stack at its smallest size (one turn of each scenario): the
model's runs answer its calls, the 5-round turn fails then passes, the test round goes red then
green, and every span is timed between moments seen in that order. How short they are, is the
benchmark's figure, not this test's. Then its pieces on hand-made frames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.runloop import (
    BREAK,
    FILES,
    FIX,
    RUNS,
    SCRIPTS,
    answered_rounds,
    covered,
    main,
    model_spans,
    run_ends,
    split,
)
from benchmarks.v4a import apply_reference
from spark_ide import responses_protocol as protocol


@pytest.mark.timeout(120)
def test_it_times_the_runs_loop_the_five_round_turn_and_a_test_round_and_checks_they_went_as_scripted() -> None:
    figures: Any = main(["--turns", "1", "--rate", "5000"])

    json.dumps(figures)  # the management command prints it as JSON
    assert figures["sound"] is True, figures
    for side in ("ide", "bare"):
        loop = figures["loop"][side]
        assert loop["as_scripted"] is True and loop["rounds_left_out_waiting_on_the_model"] == 0
        to_request = loop["run_end_to_request_ms"]
        assert to_request["n"] == RUNS and 0 < to_request["p50"] <= to_request["max"]  # the request follows the end
        # A run's wall holds the program's life.
        assert loop["run_wall_ms"]["p50"] >= loop["run_duration_ms"]["p50"] > 0
        five = figures["five_round_turn"][side]
        assert five["as_scripted"] is True and five["turns"] == 1
        parts = five["median_ms"]
        assert parts["model"] > 0 and parts["run"] > 0 and parts["sandbox_start_teardown"] >= 0
        assert sum(parts.values()) == pytest.approx(five["total_ms"]["p50"], abs=0.01)
        assert 0 < sum(five["of_the_client_median_ms"].values()) <= parts["client"]
    ide = figures["loop"]["ide"]
    # The room has the run's end after the sandbox produced it, and answers the call after that.
    assert ide["run_end_to_room_ms"]["p50"] > 0 and ide["room_to_request_ms"]["p50"] > 0
    tests = figures["test_round"]
    assert tests["as_scripted"] is True
    assert tests["red_run_end_to_test_round_request_ms"]["n"] == 1
    assert tests["red_run_end_to_test_round_request_ms"]["p50"] > 0
    assert tests["green_run_end_to_turn_finished_ms"]["p50"] > 0
    rows = figures["rows"]
    assert rows[0]["met"] is True
    assert rows[1]["unit"] == "ms" and isinstance(rows[1]["met"], bool) and rows[1]["baseline"] is not None
    assert set(figures["charts"]) == {"runloop_run_end_to_request_cdf", "runloop_five_round_split"}


def test_the_five_round_script_breaks_add_then_restores_it() -> None:
    broken = apply_reference(dict(FILES), BREAK)

    assert "return a - b" in broken["app.py"]
    assert apply_reference(broken, FIX) == FILES
    assert [step[1]["name"] if isinstance(step, list) else "text" for step in SCRIPTS["five"]] == [
        "apply_patch", "run", "apply_patch", "run", "text",
    ]


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def test_a_run_call_is_answered_by_the_request_carrying_its_output_on_the_chain() -> None:
    call = {"type": protocol.CUSTOM_TOOL_CALL, "call_id": "call_1", "name": "run"}
    output = {"type": protocol.CUSTOM_TOOL_CALL_OUTPUT, "call_id": "call_1", "output": "$ python one.py"}
    events = [
        (1.000, False, _event(protocol.CREATE, input=[{"type": "message", "role": "user"}])),
        (1.010, True, _event(protocol.COMPLETED, response={"id": "resp_1", "output": [call]})),
        (1.050, False, _event(protocol.CREATE, previous_response_id="resp_1", input=[output])),
        (1.060, True, _event(protocol.COMPLETED, response={"id": "resp_2", "output": []})),
    ]

    [answered] = list(answered_rounds(events))

    assert (answered.completed_at, answered.sent_at) == (1.010, 1.050)
    assert answered.outputs == ["$ python one.py"] and answered.chained is True
    # The model's time: each request to the end of its answer, in order.
    assert model_spans(events) == [(1.000, 1.010), (1.050, 1.060)]


def test_a_warm_up_is_no_time_of_the_model_and_a_broken_chain_is_noted() -> None:
    calls = [{"type": protocol.CUSTOM_TOOL_CALL, "call_id": f"call_{n}"} for n in (1, 2)]
    output = {"type": protocol.CUSTOM_TOOL_CALL_OUTPUT, "call_id": "call_1", "output": "ok"}
    events = [
        (0.5, False, _event(protocol.CREATE, generate=False, input=[])),
        (0.6, True, _event(protocol.COMPLETED, response={"id": "resp_0", "output": []})),
        (1.0, False, _event(protocol.CREATE, input=[])),
        (1.1, True, _event(protocol.COMPLETED, response={"id": "resp_1", "output": calls})),
        (1.2, False, _event(protocol.CREATE, previous_response_id="resp_1", input=[output])),
    ]

    [answered] = list(answered_rounds(events))

    assert answered.chained is False  # call_2 went unanswered
    assert model_spans(events) == [(1.0, 1.1)]


def test_a_turn_s_time_is_split_into_the_model_the_sandbox_the_run_and_the_rest() -> None:
    tapped = [
        (1.0, False, _event(protocol.CREATE, input=[])),
        (1.1, True, _event(protocol.COMPLETED, response={"id": "r1", "output": []})),
        (1.4, False, _event(protocol.CREATE, input=[])),
        (1.5, True, _event(protocol.COMPLETED, response={"id": "r2", "output": []})),
    ]
    # A run from 1.08 (during the first answer) to 1.38; the program lived 200 ms of it.
    assert covered((1.08, 1.38), model_spans(tapped)) == pytest.approx(0.02)

    parts = split(0.99, 1.52, tapped, [(1.08, 1.38)], [200.0])

    assert parts.total == pytest.approx(530.0)
    assert parts.model == pytest.approx(200.0)
    assert parts.sandbox == pytest.approx(280.0)  # its 20 ms inside the model's time are the model's
    assert parts.start_teardown == pytest.approx(80.0)
    assert parts.client == pytest.approx(50.0)
    assert parts.to_first_request == pytest.approx(10.0) and parts.after_last_answer == pytest.approx(20.0)


def test_the_ide_s_stamps_of_a_run_s_end_are_read_by_run_and_place(tmp_path: Path) -> None:
    ends = tmp_path / "ends.txt"
    ends.write_text("abc sandbox 10.500000\nabc room 10.500600\ndef sandbox 11.000000\n", encoding="utf-8")

    assert run_ends(ends) == {"abc": {"sandbox": 10.5, "room": 10.5006}, "def": {"sandbox": 11.0}}
    assert run_ends(tmp_path / "none.txt") == {}


@pytest.mark.parametrize("argv", [["--turns", "0"], ["--rate", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
