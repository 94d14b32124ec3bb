"""What the model is told of a run it asked for: the run tool's output.

`run_report` puts a run's end (``run.finished``: status, exit code, the sandbox's sentence
naming the limit it hit) and its output together for the model, the output cut to a budget
(``SPARK_RUN_OUTPUT_TO_MODEL``, default 8 KB of UTF-8) by `cut_output`: its first and last
lines, with the number of lines left out between them. Lines are kept whole where they fit;
a line longer than its share is cut at a character, never inside one. Control characters
other than tab and newline are shown escaped (``\\x07``), terminal colour codes removed,
so binary output reads as text. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .events import RunFinished

RUN_OUTPUT_TO_MODEL = 8 * 1024  # bytes of output the model gets of one run (SPARK_RUN_OUTPUT_TO_MODEL)
MIN_BUDGET = 256  # a smaller budget is raised to this: a report with no output to read helps nobody
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# A limit the sandbox enforces by ending the run, by status (the others show in the message).
_LIMIT_STATUSES = {"timeout": "the time limit", "output_truncated": "the output limit"}


@dataclass(frozen=True, slots=True)
class CutOutput:
    """An output as kept: its ``head`` and its ``tail`` (empty when nothing was cut), and what
    was left out between them (whole lines, and bytes)."""

    head: str
    tail: str = ""
    lines_left_out: int = 0
    bytes_left_out: int = 0

    def shown(self) -> str:
        """Head, a line saying what is left out, tail."""
        if not self.bytes_left_out:
            return self.head + self.tail
        if self.lines_left_out:
            gap = f"[... {self.lines_left_out} lines left out ({self.bytes_left_out} bytes) ...]"
        else:
            gap = f"[... {self.bytes_left_out} bytes of a long line left out ...]"
        before = "" if not self.head or self.head.endswith("\n") else "\n"
        return f"{self.head}{before}{gap}\n{self.tail}"


def readable(output: str) -> str:
    """``output`` as the model reads it: ``\\r\\n`` as ``\\n``, no colour codes, other control
    characters escaped."""
    text = _ANSI.sub("", output.replace("\r\n", "\n"))
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def cut_output(text: str, budget: int = RUN_OUTPUT_TO_MODEL) -> CutOutput:
    """``text`` kept within ``budget`` UTF-8 bytes: its head and its tail (half each), whole
    lines where they fit, and what of the middle is left out."""
    size = len(text.encode("utf-8"))
    if size <= budget:
        return CutOutput(text)
    lines = text.splitlines(keepends=True)
    half = budget // 2
    head, head_whole, head_part = _take(lines, half)
    # the tail comes from the lines after the head's; a single line cut in the head gives its end too
    rest = lines[head_whole + head_part:] or lines[head_whole:]
    tail, tail_whole, tail_part = _take(rest[::-1], budget - half, from_end=True)
    shown_lines = min(len(lines), head_whole + head_part + tail_whole + tail_part)
    left_out = size - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return CutOutput(head, tail, len(lines) - shown_lines, left_out)


def _take(lines: list[str], budget: int, *, from_end: bool = False) -> tuple[str, int, int]:
    """As many whole ``lines`` as fit in ``budget`` bytes (``lines`` last first when
    ``from_end``), or, when not even the first fits, the part of it that does (its end, from
    the end); with the number of whole lines and of partly kept lines (0 or 1)."""
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8"))
        if used + size > budget:
            break
        kept.append(line)
        used += size
    if kept or not lines:
        return "".join(kept[::-1] if from_end else kept), len(kept), 0
    line = lines[0]
    data = line.encode("utf-8")
    if from_end:  # never half a character: a cut inside one drops its bytes
        return data[len(data) - budget:].decode("utf-8", errors="ignore"), 0, 1
    return data[:budget].decode("utf-8", errors="ignore"), 0, 1


def limit_hit(finished: RunFinished) -> str:
    """Which limit ended the run ("" for none the status shows; the message names the others,
    such as memory: "exited with code 1: the program ran out of memory")."""
    return _LIMIT_STATUSES.get(finished.status, "")


def run_report(command: str, finished: RunFinished, output: str, *, budget: int = RUN_OUTPUT_TO_MODEL) -> str:
    """The run tool's output for the model: the command, how it ended, and its output cut to
    ``budget`` bytes."""
    lines = [f"$ {command}"]
    if finished.error:
        lines.append(f"The run could not start ({finished.error}): {finished.message}")
        return "\n".join(lines)
    code = "none (the sandbox ended the run)" if finished.exit_code is None else str(finished.exit_code)
    lines.append(f"status: {finished.status}, exit code: {code}, {finished.duration_ms} ms")
    limit = limit_hit(finished)
    if limit:
        lines.append(f"limit hit: {limit}")
    lines.append(f"why it ended: {finished.message}")
    text = readable(output)
    if not text:
        lines.append("output: none")
        return "\n".join(lines)
    cut = cut_output(text, max(budget, MIN_BUDGET))
    if cut.bytes_left_out:
        lines.append(f"output ({len(text.encode('utf-8'))} bytes; its start and its end):")
    else:
        lines.append("output:")
    return "\n".join(lines) + "\n" + cut.shown()
