"""The editing benchmark: it really applies the edits through the engine, and its figures are
timings of that work (bounds any real run meets), not placeholders."""

from __future__ import annotations

import json

from benchmarks import editing


def test_it_tokenizes_the_stream_into_pieces_of_the_asked_size() -> None:
    assert editing.tokenize("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_its_harness_applies_a_streamed_edit_through_the_engine() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    edits = [("def g():\n    return 2\n", "def g():\n    return 3\n")]

    _, result = editing.run_engine(text, editing.tokenize(editing.build_stream(edits), 3))

    assert result == "def f():\n    return 1\n\ndef g():\n    return 3\n"


def test_its_edits_are_unique_in_the_generated_file() -> None:
    text = editing.build_file(5000)
    for old, _ in editing.build_edits(text, 20):
        assert text.count(old) == 1


def test_it_reports_engine_and_baseline_figures_from_one_run() -> None:
    report = editing.main(["--lines", "300", "--blocks", "4", "--repeat", "2"])

    assert json.loads(json.dumps(report)) == report
    assert report["same_result_as_baseline"] is True
    engine, baseline = report["engine"], report["baseline_str_replace"]
    assert isinstance(engine, dict) and isinstance(baseline, dict)
    for clock in ("wall", "cpu"):
        figures = engine[clock]
        # A few hundred 4-character tokens through a Python engine: far from 0 and from 1e8/s.
        assert 1_000 < figures["tokens_per_s_median"] < 100_000_000
        assert 0 <= figures["latency_ms_p50_median"] <= figures["latency_ms_p99_median"]
        assert figures["latency_ms_p99_median"] <= figures["latency_ms_max_median"] < 1_000
        # One str.replace per block beats streaming every token through the engine.
        assert baseline[clock]["seconds_median"] < figures["seconds_median"]
    meets = report["meets_targets"]
    assert isinstance(meets, dict) and set(meets) == {"wall", "cpu"}
