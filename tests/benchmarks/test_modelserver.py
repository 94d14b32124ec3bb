"""The model-server benchmark: its timing arithmetic, and a tiny run that plays every token
and is never faster than the rate the engine is held at. How close to the rate a run comes is
the benchmark's figure, not this test's: a busy machine runs late."""

from __future__ import annotations

import json

import pytest

from benchmarks.modelserver import Run, main, percentile
from benchmarks.modelserver_streams import answer_text, paced_streams
from spark_ide.modelserver.engines.scripted import MAX_PIECE_TOKENS, split_tokens


def test_it_measures_ttft_decode_rate_and_gaps() -> None:
    run = Run(started=10.0, arrivals=[10.5, 10.6, 10.7, 10.9])
    assert abs(run.ttft_s - 0.5) < 1e-9
    assert abs(run.decode_tps - 3 / 0.4) < 1e-9
    assert [round(gap, 6) for gap in run.gaps_s] == [0.1, 0.1, 0.2]


def test_percentile_picks_from_the_sorted_values() -> None:
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert percentile([5.0, 1.0, 3.0], 0.99) == 5.0


def test_the_scripted_engine_plays_every_token_never_above_its_rate() -> None:
    tokens, rate = 2_000, 5_000.0
    results = main(["--no-llama", "--scripted-tokens", str(tokens), "--scripted-rate", str(rate)])

    json.dumps(results)  # the management command prints it as JSON
    scripted = results["scripted"]
    assert isinstance(scripted, dict)
    paced, unpaced, call = scripted["paced"], scripted["max"], scripted["tool_call"]
    assert paced["tokens"] == unpaced["tokens"] == call["tokens"] == tokens  # every token, as the server counted
    assert 0 < call["tokens_per_s"] <= 1.02 * rate and call["deltas"] > 1
    assert paced["target"] == rate
    # Paced by its own clock, the engine cannot be early; on a busy machine it may run late.
    assert 0 < paced["tokens_per_s"] <= 1.02 * rate
    assert unpaced["tokens_per_s"] > 0
    assert 1 <= paced["tokens_per_delta"] <= MAX_PIECE_TOKENS
    assert 0 < scripted["server_ttft_ms_median"] <= scripted["server_ttft_ms_p99"]
    assert results["llama"] == {"skipped": "--no-llama"}


async def test_paced_streams_count_the_servers_cpu_per_delta_and_token() -> None:
    (level,) = await paced_streams([3], 300, 1000.0)
    assert level["streams"] == 3 and level["tokens"] == sum(len(split_tokens(answer_text(300, i))) for i in range(3))
    # Every token arrived (the answers ended), none before its time (300 tokens at 1,000/s).
    assert 0 < level["slowest_rate_share"] <= 1.02
    assert level["cpu_us_per_frame"] > 0 and level["cpu_us_per_token"] > 0
    assert 0 < level["frames_per_token"] <= 1 + 10 / 280  # a delta per token at most, and 8 other events


@pytest.mark.parametrize("argv", [["--scripted-rate", "0"], ["--scripted-tokens", "0"], ["--bogus"],
                                  ["--streams", "x"], ["--streams", "0"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--no-llama", *argv])
