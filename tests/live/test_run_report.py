"""What the model is told of its run: the end of the run, which limit stopped it, and the
output cut to a budget (head and tail, whole lines, whole characters)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.live.events import RunError, RunFinished
from spark_ide.live.run_report import RUN_OUTPUT_TO_MODEL, CutOutput, cut_output, readable, run_report


def finished(status: str = "ok", exit_code: int | None = 0, message: str = "exited with code 0") -> RunFinished:
    return RunFinished(run="r1", exit_code=exit_code, duration_ms=420, status=status, truncated=False,
                       message=message, sandboxed=True)


def test_a_short_run_is_told_whole() -> None:
    report = run_report("python main.py", finished(), "hello\nworld\n")
    assert report == (
        "$ python main.py\nstatus: ok, exit code: 0, 420 ms\nwhy it ended: exited with code 0\noutput:\nhello\nworld\n"
    )
    assert run_report("pytest", finished(), "").endswith("\noutput: none")


@pytest.mark.parametrize(
    ("end", "told"),
    [
        (finished("failed", 1, "exited with code 1"),
         ["status: failed, exit code: 1", "why it ended: exited with code 1"]),
        (finished("timeout", None, "stopped: still running after the time limit of 15 s"),
         ["exit code: none (the sandbox ended the run)", "limit hit: the time limit",
          "why it ended: stopped: still running after the time limit of 15 s"]),
        (finished("timeout", 152, "stopped: the CPU time limit of 10 s was reached"),
         ["exit code: 152", "limit hit: the time limit"]),
        (finished("output_truncated", None, "stopped: the output passed the limit of 65536 bytes"),
         ["limit hit: the output limit", "passed the limit of 65536 bytes"]),
        (finished("failed", 1, "exited with code 1: the program ran out of memory (limit: 256 MB per process)"),
         ["why it ended: exited with code 1: the program ran out of memory (limit: 256 MB per process)"]),
        (finished("killed", None, "stopped by a participant"),
         ["status: killed", "why it ended: stopped by a participant"]),
    ],
)
def test_how_the_run_ended_and_which_limit_stopped_it(end: RunFinished, told: list[str]) -> None:
    report = run_report("pytest", end, "x\n")
    for line in told:
        assert line in report
    assert ("limit hit:" in report) is (end.status in ("timeout", "output_truncated"))


def test_a_run_that_could_not_start_says_why_and_nothing_else() -> None:
    end = RunFinished.refused("r1", RunError.SANDBOX_BUSY, "every sandbox uid is in use")
    assert run_report("pytest", end, "") == (
        "$ pytest\nThe run could not start (sandbox_busy): every sandbox uid is in use"
    )


def test_a_huge_output_keeps_its_start_and_its_end_within_the_budget() -> None:
    output = "".join(f"line {i:05d} ✓\n" for i in range(10_000))
    cut = cut_output(output)
    assert cut.head.startswith("line 00000 ✓\nline 00001") and cut.tail.endswith("line 09999 ✓\n")
    assert len((cut.head + cut.tail).encode()) <= RUN_OUTPUT_TO_MODEL
    assert cut.head.endswith("\n") and cut.tail.startswith("line ")  # whole lines only
    shown = cut.head.count("\n") + cut.tail.count("\n")
    assert cut.lines_left_out == 10_000 - shown
    assert cut.bytes_left_out == len(output.encode()) - len((cut.head + cut.tail).encode())
    report = run_report("pytest", finished("failed", 1, "exited with code 1"), output)
    assert f"output ({len(output.encode())} bytes; its start and its end):" in report
    assert f"\n[... {cut.lines_left_out} lines left out ({cut.bytes_left_out} bytes) ...]\n" in report
    assert len(report.encode()) < RUN_OUTPUT_TO_MODEL + 300


def test_the_budget_is_a_parameter_with_a_floor() -> None:
    output = "".join(f"{i}\n" for i in range(1000))
    assert len(cut_output(output, 100).head.encode()) <= 50
    small = run_report("pytest", finished(), output, budget=1)  # at least MIN_BUDGET is shown
    assert "\n0\n1\n" in small and small.endswith("999\n")


def test_one_huge_line_is_cut_at_characters_never_inside_one() -> None:
    output = "é" * 10_000 + "\n"  # two bytes each: a cut at an odd byte would split one
    cut = cut_output(output, 1001)
    assert set(cut.head) == {"é"} and set(cut.tail.rstrip("\n")) == {"é"}
    assert len(cut.head.encode()) <= 500 and len(cut.tail.encode()) <= 501
    assert cut.lines_left_out == 0  # the one line is partly shown
    assert cut.shown() == f"{cut.head}\n[... {cut.bytes_left_out} bytes of a long line left out ...]\n{cut.tail}"


def test_a_long_line_among_short_ones_keeps_the_short_ones_whole() -> None:
    output = "start\n" + "x" * 50_000 + "\nend\n"
    cut = cut_output(output, 1000)
    assert (cut.head, cut.tail, cut.lines_left_out) == ("start\n", "end\n", 1)


def test_binary_output_reads_as_text() -> None:
    output = "ok\x00\x01\x07\x1b[31mred\x1b[0m\r\nbar\x7f\ttab\ufffd\n"  # the sandbox decodes with errors=replace
    assert readable(output) == "ok\\x00\\x01\\x07red\nbar\\x7f\ttab\ufffd\n"
    report = run_report("python main.py", finished(), output)
    assert report.endswith("output:\nok\\x00\\x01\\x07red\nbar\\x7f\ttab\ufffd\n")
    lone = run_report("python main.py", finished(), "10%\r50%\r100%\n")
    assert lone.endswith("10%\\x0d50%\\x0d100%\n")


def test_output_within_the_budget_is_not_cut() -> None:
    assert cut_output("a\nb\n", 4) == CutOutput("a\nb\n")
    assert cut_output("", 4) == CutOutput("")


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=["Cs"]), max_size=400), budget=st.integers(8, 300))
def test_a_cut_output_is_within_budget_and_a_part_of_the_output(text: str, budget: int) -> None:
    cut = cut_output(text, budget)
    kept = (cut.head + cut.tail).encode()
    assert len(kept) <= budget or not cut.bytes_left_out
    assert text.startswith(cut.head) and text.endswith(cut.tail)
    assert cut.bytes_left_out == len(text.encode()) - len(kept)
    assert 0 <= cut.lines_left_out <= len(text.splitlines())
    if not cut.bytes_left_out:
        assert cut.head == text and not cut.tail
