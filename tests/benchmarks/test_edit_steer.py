"""The edit-steering benchmark on the real stack at a tiny size: each steer by editing gives
exactly the answer the edit asked for, nothing of an old answer comes after its end, the typing
phase ran while a turn wrote (and never steered it), and the rows say what they measured. How
fast it is, is the benchmark's figure, not this test's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.edit_steer import main, parse


@pytest.mark.timeout(240)
def test_it_times_steers_by_editing_and_typing_with_and_without_the_feature() -> None:
    figures: Any = main(["--steers", "2", "--keystrokes", "8", "--blocks", "2", "--idle-ms", "30"])

    json.dumps(figures)  # the management command prints it as JSON
    steer, typing = figures["steer"], figures["typing"]
    assert steer["lossless"] is True and figures["late_events"] == 0
    assert steer["commit_to_reprompt_ms"]["n"] == 2 and steer["commit_to_reprompt_ms"]["p50"] > 0
    assert typing["with_feature_ms"]["n"] == typing["without_feature_ms"]["n"] == 8
    assert typing["turn_ran_throughout"] is True and typing["steered"] is False
    assert [row["unit"] for row in figures["rows"]] == ["ms", "ms", "ms"]
    assert steer["typed"]["lossless"] is True and figures["rows"][0]["baseline"] is not None
    assert figures["rows"][2]["baseline"] == typing["without_feature_ms"]["p99"]


def test_bad_flags_are_refused() -> None:
    for argv in (["--steers", "0"], ["--keystrokes", "1"], ["--phases", "steer,nothing"]):
        with pytest.raises(SystemExit):
            parse(argv)
