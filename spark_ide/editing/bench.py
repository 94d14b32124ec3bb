"""Edit-engine benchmark: stream 20 edit blocks in 4-character tokens into a 5,000-line file.

Reports apply throughput (tokens/s) and per-token `feed()` latency, medians over several
repetitions, next to the plain-string baseline (the same edits applied with `str.replace`
in one shot) measured in the same run. `python -m spark_ide.editing.bench --help`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing.turn import TurnEditor, workspace_files

TARGET_TOKENS_PER_S = 50_000.0
TARGET_P99_MS = 1.0
PATH = "src/big_module.py"


def build_file(line_count: int) -> str:
    """A Python-looking file whose lines are all distinct."""
    lines = []
    for row in range(line_count):
        if row % 10 == 0:
            lines.append(f"def function_{row}(value, factor={row % 7}):")
        elif row % 10 == 9:
            lines.append("")
        else:
            lines.append(f"    result_{row} = transform(value, {row}, factor) + offset_{row % 13}")
    return "\n".join(lines) + "\n"


def build_edits(text: str, blocks: int) -> list[tuple[str, str]]:
    """(old_text, new_text) pairs spread over the file: 3 old lines become 4 new ones."""
    lines = text.split("\n")
    stride = max(len(lines) // (blocks + 1), 4)
    edits = []
    for block in range(blocks):
        start = stride * (block + 1) + 1
        old = lines[start : start + 3]
        new = [
            old[0],
            f"    checked_{block} = validate(value, limit={block * 3})",
            old[1].replace("transform", "transform_fast"),
            old[2] + f"  # tuned in block {block}",
        ]
        edits.append(("\n".join(old) + "\n", "\n".join(new) + "\n"))
    return edits


def build_stream(edits: Sequence[tuple[str, str]], path: str = PATH) -> str:
    parts = ["I will speed up the hot loops and add validation.\n\n"]
    for block, (old, new) in enumerate(edits):
        parts.append(f"Change {block}: use the fast transform here.\n")
        parts.append(f'<edit path="{path}">\n<old_text>\n{old}</old_text>\n')
        parts.append(f"<new_text>\n{new}</new_text>\n</edit>\n\n")
    parts.append("That is all.\n")
    return "".join(parts)


def tokenize(stream: str, size: int) -> list[str]:
    return [stream[at : at + size] for at in range(0, len(stream), size)]


def run_engine(text: str, tokens: Sequence[str]) -> tuple[float, list[float], str]:
    """Seconds for the whole stream, per-token feed() seconds, and the final text."""
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction():
        files[PATH] = Text(text)
    editor = TurnEditor(doc, "bench")
    latencies = []
    clock = time.perf_counter
    started = clock()
    for token in tokens:
        before = clock()
        editor.feed(token)
        latencies.append(clock() - before)
    editor.finish()
    elapsed = clock() - started
    return elapsed, latencies, str(files[PATH])


def run_baseline(text: str, edits: Sequence[tuple[str, str]]) -> tuple[float, str]:
    started = time.perf_counter()
    for old, new in edits:
        text = text.replace(old, new, 1)
    return time.perf_counter() - started, text


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="spark_bench editing", description=__doc__)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--token-chars", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    text = build_file(args.lines)
    edits = build_edits(text, args.blocks)
    tokens = tokenize(build_stream(edits), args.token_chars)

    engine_seconds, p50s, p99s, maxima, baseline_seconds = [], [], [], [], []
    same_result = True
    for _ in range(args.repeat):
        elapsed, latencies, engine_text = run_engine(text, tokens)
        plain_elapsed, plain_text = run_baseline(text, edits)
        same_result = same_result and engine_text == plain_text
        engine_seconds.append(elapsed)
        p50s.append(_percentile(latencies, 0.50))
        p99s.append(_percentile(latencies, 0.99))
        maxima.append(max(latencies))
        baseline_seconds.append(plain_elapsed)

    engine_median = statistics.median(engine_seconds)
    baseline_median = statistics.median(baseline_seconds)
    tokens_per_s = len(tokens) / engine_median
    p99_ms = statistics.median(p99s) * 1000
    return {
        "benchmark": "editing",
        "file_lines": args.lines,
        "blocks": args.blocks,
        "token_chars": args.token_chars,
        "tokens": len(tokens),
        "repeat": args.repeat,
        "engine": {
            "seconds_median": engine_median,
            "tokens_per_s_median": tokens_per_s,
            "latency_ms_p50_median": statistics.median(p50s) * 1000,
            "latency_ms_p99_median": p99_ms,
            "latency_ms_max_median": statistics.median(maxima) * 1000,
        },
        "baseline_str_replace": {
            "seconds_median": baseline_median,
            "tokens_per_s_median": len(tokens) / baseline_median,
        },
        "engine_over_baseline_time": engine_median / baseline_median,
        "same_result_as_baseline": same_result,
        "targets": {"tokens_per_s": TARGET_TOKENS_PER_S, "latency_ms_p99": TARGET_P99_MS},
        "meets_targets": tokens_per_s >= TARGET_TOKENS_PER_S and p99_ms < TARGET_P99_MS,
    }


if __name__ == "__main__":
    import sys

    print(json.dumps(main(sys.argv[1:]), indent=2))
