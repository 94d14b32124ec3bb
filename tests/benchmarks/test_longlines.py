"""The long-lines benchmark on the real stack at tiny sizes: every answer arrives whole and
every written file is whole, each stage is measured alone, and each row names its baseline."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.longlines import (
    BASELINE_LENGTH,
    STAGES,
    answer,
    json_lines,
    literal_file,
    main,
    pooled,
    prose_lines,
)

TINY = ["--lengths", "3000", "--rates", "20000", "--chars", "4000", "--stage-budget-s", "0.5", "--stage-reps", "2",
        "--max-turn-s", "5", "--min-samples", "0"]


def test_its_answers_have_the_line_lengths_they_name() -> None:
    assert {len(line) for line in prose_lines(1_000, 100, seed=1).split("\n")[:-1]} == {100}
    assert "\n" not in prose_lines(50_000, 50_000, seed=1)
    assert max(len(line) for line in json_lines(20_000, 5_000, seed=1).split("\n")) in range(5_000, 5_200)
    one_line = literal_file(None).split("\n")
    assert max(map(len, one_line)) > 50_000 and max(map(len, literal_file(100).split("\n"))) < 110
    text, path, body = answer("json", 100, 2_000, seed=3)
    assert path is not None and f'<write path="{path}">\n{body}</write>' in text


@pytest.mark.timeout(240)
def test_every_answer_and_file_arrives_whole_and_rows_compare_to_short_lines() -> None:
    figures: Any = main(TINY)
    turns = figures["turns"]
    assert {(t["kind"], t["length"]) for t in turns} == {
        ("prose", BASELINE_LENGTH), ("prose", 3000), ("json", BASELINE_LENGTH), ("json", 3000),
        ("literal", BASELINE_LENGTH), ("literal", 50_000),
    }
    for turn in turns:
        assert turn["whole"], turn
        assert turn["file_whole"] is (None if turn["kind"] == "prose" else True), turn
        assert turn["added_ms"]["n"] > 0 and turn["server_cpu_ms_per_1k_tokens"] >= 0
    for stage in figures["stages"]:
        assert set(stage["us_per_delta"]) == {*STAGES, "deltas"} and stage["us_per_delta"]["deltas"] > 0
        assert stage["reps"] == 2  # the lengths taken in turn, each stage's median
    rows = figures["rows"]
    assert len(rows) == 3 + 2 * 3  # a stages row per long answer, then CPU and latency per long turn
    assert all(row["baseline"] is not None for row in rows)


def test_a_turns_takes_pool_their_deltas_cpu_and_wholeness() -> None:
    def take(latencies: list[float], cpu_s: float, whole: bool, worst_ms: float) -> dict[str, Any]:
        return {"kind": "literal", "length": 50_000, "rate": 20_000, "tokens": 1_000, "chars": 4_000,
                "whole": whole, "file_whole": whole, "latencies": latencies, "server_cpu_s": cpu_s,
                "server_cpu_share": 0.2, "generator_cpu_share": 0.4, "wall_s": 1.0, "frames": len(latencies),
                "worst": [{"at": 0.5, "ms": worst_ms}]}

    # One take's pause (its 25 slowest deltas at 9 ms) is its p99 alone; pooled with three calm
    # takes it is the p99 of 8,000 deltas, which a pause of 25 does not reach.
    paused = take([0.3] * 1_975 + [9.0] * 25, 0.02, True, 9.0)
    calm = [take([0.3] * 1_990 + [0.5] * 10, 0.01, True, 0.5) for _ in range(3)]
    one = pooled([paused])
    assert one["added_ms"]["p99"] == 9.0 and one["takes"] == 1
    four = pooled([paused, *calm])
    assert four["takes"] == 4 and four["added_ms"]["n"] == 8_000 and four["added_ms"]["p99"] < 1.0
    assert four["server_cpu_ms_per_1k_tokens"] == 12.5  # 0.05 s over 4,000 tokens
    assert four["frames"] == 8_000 and [w["ms"] for w in four["worst"]] == [9.0, 0.5, 0.5, 0.5]
    assert four["whole"] and four["file_whole"] is True
    broken = pooled([paused, take([0.3], 0.01, False, 0.3)])
    assert not broken["whole"] and broken["file_whole"] is False
