"""V4A patches: a one-shot reference applier, and the streaming engine timed against it.

`apply_reference(files, patch)` applies a whole V4A patch at once to plain strings, with the
rules of docs/editing.md ("V4A patches"): the same matching (v4a_match.seek), nothing
streamed, nothing located early. `spark_bench editing` feeds `build_patch`'s 20 hunks of its
5,000-line file to `TurnEditor.open_patch` in 4-character tokens (its V4A rows) and checks the
document ends as the reference says; tests hold the streaming engine to it too.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from spark_ide.editing.v4a_match import seek

MARKERS = ("*** End Patch", "*** End of File", "*** Add File:", "*** Update File:", "*** Delete File:", "@@")


@dataclass
class _Hunk:
    anchors: list[str] = field(default_factory=list)
    steps: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)
    end_of_file: bool = False


def _ops(patch: str) -> list[tuple[str, str, str | None, list[str]]]:
    """(kind, path, move target, body lines) per operation, from a whole patch."""
    ops: list[tuple[str, str, str | None, list[str]]] = []
    for raw in patch.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if line == "*** End Patch":
            break
        if line == "*** Begin Patch":
            continue
        for kind in ("Add", "Update", "Delete"):
            if line.startswith(f"*** {kind} File:"):
                ops.append((kind, line.split(":", 1)[1].strip(), None, []))
                break
        else:
            if line.startswith("*** Move to:") and ops:
                kind, path, _, body = ops[-1]
                ops[-1] = (kind, path, line.split(":", 1)[1].strip(), body)
            elif ops:
                ops[-1][3].append(raw)
    return ops


def _hunks(body: list[str]) -> list[_Hunk]:
    hunks: list[_Hunk] = []
    blanks = 0
    for line in body:
        if line.startswith("@@"):
            if not hunks or hunks[-1].steps or hunks[-1].end_of_file:
                hunks.append(_Hunk())
            anchor = line[2:].removeprefix(" ")
            if anchor.strip():
                hunks[-1].anchors.append(anchor)
            blanks = 0
        elif line.strip() == "*** End of File":
            hunks[-1].end_of_file = True
            blanks = 0
        elif line == "":
            blanks += 1
        else:
            if not hunks or hunks[-1].end_of_file:
                hunks.append(_Hunk())
            hunks[-1].steps += [(" ", "")] * blanks + [(line[0], line[1:])]
            blanks = 0
    return hunks


def _update(text: str, hunks: list[_Hunk]) -> str:
    raw = text.split("\n")
    ended = text.endswith("\n")
    if raw[-1] == "":
        raw.pop()
    lines = [line + "\n" for line in raw]  # each with its end, the last one's taken off below
    if lines and not ended:
        lines[-1] = lines[-1][:-1]
    eol = "\r\n" if raw and raw[0].endswith("\r") else "\n"
    cursor = 0
    for hunk in (hunk for hunk in hunks if hunk.steps):  # (a hunk without lines fails)
        bodies = [line.rstrip("\n").removesuffix("\r") for line in lines]
        start = cursor
        for anchor in hunk.anchors:
            found = seek(bodies, [anchor], start)
            if found is None:
                break
            start = found.line + 1
        else:
            old = [text for kind, text in hunk.steps if kind != "+"]
            if old:
                place = seek(bodies, old, start, end_of_file=hunk.end_of_file)
                if place is None:
                    continue
                first = place.line
            else:
                first = start if hunk.anchors else len(lines)
            new: list[str] = []
            row = first
            for kind, line in hunk.steps:
                if kind == "+":
                    new.append(line + eol)
                elif kind == " ":
                    new.append(lines[row])
                if kind != "+":
                    row += 1
            lines[first:row] = new
            if old or hunk.anchors:
                cursor = first + len(new)
    # A line followed by another has its end (a line added after an unended last one gives it one).
    return "".join(line if line.endswith("\n") or at == len(lines) - 1 else line + eol for at, line in enumerate(lines))


def apply_reference(files: dict[str, str], patch: str) -> dict[str, str]:
    """The files after ``patch``, applied at once (operations that fail change nothing)."""
    files = dict(files)
    for kind, path, target, body in _ops(patch):
        if kind == "Add":
            files[path] = "".join(line[1:] + "\n" for line in body if line.startswith("+"))
        elif kind == "Delete":
            files.pop(path, None)
        elif path in files:
            text = files.pop(path)
            files[target or path] = _update(text, _hunks(body))
    return files


# -- the benchmark --


def build_patch(text: str, hunks: int, path: str, *, only: Collection[int] | None = None) -> str:
    """A V4A patch of ``hunks`` hunks spread over ``text`` (lines all distinct): 3 context
    lines, 2 removed, 3 added, 3 context lines each (``only``: just those hunks, by index)."""
    lines = text.split("\n")
    stride = max(len(lines) // (hunks + 1), 12)
    parts = ["*** Begin Patch\n", f"*** Update File: {path}\n"]
    for hunk in range(hunks):
        if only is not None and hunk not in only:
            continue
        at = stride * (hunk + 1) + 1
        parts.append(f"@@ {lines[at - 1]}\n" if hunk % 2 else "@@\n")
        parts += [f" {line}\n" for line in lines[at : at + 3]]
        parts += [f"-{line}\n" for line in lines[at + 3 : at + 5]]
        parts += [
            f"+    checked_{hunk} = validate(value, limit={hunk * 3})\n",
            f"+{lines[at + 3].replace('transform', 'transform_fast')}\n",
            f"+{lines[at + 4]}  # tuned in hunk {hunk}\n",
        ]
        parts += [f" {line}\n" for line in lines[at + 5 : at + 8]]
    parts.append("*** End Patch\n")
    return "".join(parts)
