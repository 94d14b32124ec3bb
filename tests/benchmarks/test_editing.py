"""The editing benchmark: it really applies the edits through the engine and walks real typed
frames, and prints its figures as JSON. How fast is the benchmark's to say, not a test's: the
figures are only checked to be measured (finite, positive, ordered)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import editing, v4a
from spark_ide.live.yjs_check import check_sync


def test_it_tokenizes_the_stream_into_pieces_of_the_asked_size() -> None:
    assert editing.tokenize("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_its_harness_applies_a_streamed_edit_through_the_engine() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    edits = [("def g():\n    return 2\n", "def g():\n    return 3\n")]

    _, result = editing.run_engine(text, editing.tokenize(editing.build_stream(edits), 3))

    assert result == "def f():\n    return 1\n\ndef g():\n    return 3\n"


def test_its_patch_streamed_through_a_call_ends_as_the_reference_applies_it() -> None:
    text = editing.build_file(400)
    patch = v4a.build_patch(text, 5, editing.PATH)
    expected = v4a.apply_reference({editing.PATH: text}, patch)[editing.PATH]

    _, result, status = editing.run_patch(text, editing.tokenize(patch, 4))

    assert status == "completed" and result == expected
    assert expected.count("# tuned in hunk") == 5 and "transform_fast" in expected


def test_its_edits_are_unique_in_the_generated_file() -> None:
    text = editing.build_file(5000)
    for old, _ in editing.build_edits(text, 20):
        assert text.count(old) == 1


def test_its_yjs_frames_are_a_keystroke_and_a_whole_document_the_check_passes() -> None:
    keystroke, whole = editing.typed_frames(50)

    assert len(keystroke) < 100 < len(whole)
    check_sync(keystroke)  # real frames: the walk refuses neither
    check_sync(whole)


def test_it_reports_engine_and_baseline_figures_from_one_run() -> None:
    report = editing.main(["--lines", "300", "--blocks", "4", "--repeat", "2", "--yjs-keystrokes", "50"])

    assert json.loads(json.dumps(report)) == report
    assert report["same_result_as_baseline"] is True
    engine, baseline = report["engine"], report["baseline_str_replace"]
    assert isinstance(engine, dict) and isinstance(baseline, dict)
    for clock in ("wall", "cpu"):
        figures = engine[clock]
        assert math.isfinite(figures["tokens_per_s_median"]) and figures["tokens_per_s_median"] > 0
        assert 0 <= figures["latency_ms_p50_median"] <= figures["latency_ms_p99_median"]
        assert figures["latency_ms_p99_median"] <= figures["latency_ms_max_median"]
        assert baseline[clock]["seconds_median"] >= 0
    meets = report["meets_targets"]
    assert isinstance(meets, dict) and set(meets) == {"wall", "cpu"}
    yjs = report["yjs_check"]
    assert isinstance(yjs, dict) and yjs["keystroke_us"] > 0 and yjs["document_us"] > 0
    patch = report["v4a"]
    assert isinstance(patch, dict) and patch["same_result_as_reference"] is True
    assert 0 <= patch["engine"]["wall"]["latency_ms_p50_median"] <= patch["engine"]["wall"]["latency_ms_p99_median"]
    rows = report["rows"]
    assert isinstance(rows, list) and [row["unit"] for row in rows] == ["tokens/s", "ms", "µs", "tokens/s", "ms", "ms"]
    assert all(isinstance(row["met"], bool) for row in rows)


@pytest.mark.parametrize("argv", [["--repeat", "0"], ["--yjs-keystrokes", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        editing.main(argv)


def test_its_hunk_undo_figures_undo_hunks_alone_as_the_reference_says() -> None:
    figures = editing.hunk_undo_figures(editing.build_file(400), 6, 2)

    assert figures["same_result_as_reference"] is True and figures["undos"] == 6
    assert 0 < figures["wall_ms_p50"] <= figures["wall_ms_p99"]
    assert figures["row"]["figure"] == "undo of one hunk alone, 400-line file, p99"
