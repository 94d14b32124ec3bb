"""The pairing benchmark on the real stack at tiny sizes: the relay loses nothing, and each
figure obeys what the stack physically allows (the engine's TTFT, causality at the tap), so a
mis-measured figure fails here. How fast is the benchmark's figure, not this test's."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from benchmarks.pairing.client import late_events
from benchmarks.pairing.run import added_latency_ms, main, prose
from spark_ide.modelserver.engines.scripted import split_tokens

STEER_TTFT_MS = 20.0
TINY = [
    "--tokens", "3000", "--capacity-tokens", "20000", "--reps", "1", "--paced-tokens", "150", "--steers", "2",
    "--steer-ttft-ms", str(STEER_TTFT_MS),
]


def _is_summary(figure: dict[str, Any]) -> bool:
    values = [figure["p50"], figure["p99"], figure["max"]]
    return figure["n"] > 0 and all(math.isfinite(v) for v in values) and values == sorted(values)


@pytest.mark.timeout(240)
def test_it_relays_every_token_and_its_figures_obey_the_stack() -> None:
    figures = main(TINY)

    json.dumps(figures)  # the management command prints it as JSON
    for name in ("throughput", "capacity"):
        through: Any = figures[name]
        assert through["zero_loss"] is True
        assert through["edit_applied"] is True
        for relay in ("ide", "bare"):  # from the first token at the tap: never faster than the client's own span
            for run in through["runs"][relay]:  # (one merged frame: that span is from turn.started)
                assert run["end_to_end_tokens_per_s"] > 0
                assert run["frames"] == 1 or run["end_to_end_tokens_per_s"] <= run["tokens_per_s"]
    latency: Any = figures["latency_1000_tps"]
    for relay in ("ide", "bare"):
        assert latency[relay]["lossless"] is True
        assert latency[relay]["client_tokens_per_s"] > 0  # the pace the client saw: measured
        for part in ("added_ms", "added_ms_prose", "added_ms_edit_block"):
            assert _is_summary(latency[relay][part])
            assert latency[relay][part]["p50"] >= 0  # the client holds a delta after the tap saw it
    steer: Any = figures["steer"]
    assert steer["lossless"] is True
    assert steer["engine_ttft_ms"] == STEER_TTFT_MS
    assert _is_summary(steer["server_steer_ms"]) and steer["server_steer_ms"]["n"] == 2
    # The engine waits its TTFT before the new turn's first token: the client cannot see it sooner.
    first_token = steer["client_first_token_minus_ttft_ms"]
    assert _is_summary(first_token) and first_token["p50"] >= 0
    ide_share = steer["client_first_token_minus_model_ms"]  # less the model's measured time to first token
    assert _is_summary(ide_share) and ide_share["p50"] >= 0
    for part in ("client_to_reprompt_ms", "relay_ms"):
        assert steer["parts_of_first_token_ms"][part]["p50"] >= 0
    assert figures["late_events"] == 0
    assert figures["zero_loss"] is True
    # The shared report format: a row per target of issue 12, each judged (every phase ran).
    rows: Any = figures["rows"]
    assert rows[0]["met"] is True  # zero loss
    judged = [row for row in rows if row["target"]]
    unjudged = [(row["figure"], row["measured"]) for row in judged if not isinstance(row["met"], bool)]
    assert len(judged) == 7 and not unjudged, unjudged
    assert any("capacity" in row["figure"] and row["baseline"] for row in rows)
    cdf: Any = figures["charts"]["pairing_latency_cdf"]
    assert cdf["kind"] == "cdf" and all(len(samples) > 0 for samples in cdf["series"].values())
    assert figures["setup"]["load_average_before_after"]


def test_it_times_each_upstream_delta_by_the_client_frame_that_completes_it() -> None:
    upstream = [(1.000, "ab"), (1.001, "cd"), (1.002, ""), (1.003, "e")]
    received = [(1.010, "abc"), (1.020, "de")]

    latencies = added_latency_ms(upstream, received)

    assert [end for end, _ in latencies] == [2, 4, 5]
    assert [ms for _, ms in latencies] == pytest.approx([10.0, 19.0, 17.0])


def test_it_counts_what_a_turn_sends_after_it_finished_except_its_rollback() -> None:
    events = [
        (0.0, {"type": "turn.delta", "turn": "a", "text": "x"}),
        (0.1, {"type": "turn.finished", "turn": "a"}),
        (0.2, {"type": "edit.status", "turn": "a", "state": "rolled_back"}),
        (0.3, {"type": "turn.delta", "turn": "a", "text": "late"}),
        (0.4, {"type": "edit.status", "turn": "a", "state": "applied"}),
        (0.5, {"type": "turn.delta", "turn": "b", "text": "y"}),
    ]

    assert late_events(events) == 2


def test_it_scripts_prose_of_exactly_the_asked_token_count() -> None:
    text = prose(1234)

    assert len(split_tokens(text)) == 1234
    assert not any(line.startswith("<") for line in text.splitlines())
