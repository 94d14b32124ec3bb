"""A small model's code fence into a file that already has content: preview, then merge.

While the fence streams, its lines are written after the file's text (following a blank
line), so people watch the code arrive. When it closes, the preview is taken out and the
code is merged into the file by structure (`merge.py`), in one transaction under the
block's origin that touches only the changed ranges. If the plan is to insert the code at
the end anyway, the preview simply stays (completed with what was held, below). So does a
preview somebody typed into while it streamed, and a definition somebody changed meanwhile
is kept as they left it (a conflict): their typing is never lost.

The preview never shows a copy of what the file already has (Python: `fence_lines`, which
decides which lines of the code it shows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing.applier import LineApplier
from spark_ide.editing.fence_lines import FenceLines, TopLevel, read_existing
from spark_ide.editing.lines import utf8_length
from spark_ide.editing.merge import MergeReport, Splice, narrowed, plan_merge, separator
from spark_ide.editing.snapshot import FileSnapshot


@dataclass(frozen=True, slots=True)
class MergeResult:
    report: MergeReport
    lines: tuple[int, int] | None  # where the code is now
    conflicts: tuple[int, ...] = ()  # lines of definitions kept because a person changed them


class FencePreview:
    """The preview of one fence into `ytext` (which had `original` when the block opened),
    written by a `LineApplier` under `origin` from its first shown line on, then merged."""

    def __init__(self, doc: Doc[Any], ytext: Text, origin: str, original: str, python: bool) -> None:
        self._doc = doc
        self._ytext = ytext
        self._origin = origin
        self.original = original
        self.python = python
        self.gap = ""  # the blank line put before the preview
        self.applier: LineApplier | None = None  # from the first line shown
        self.transactions = 0  # tracked transactions of its own (the gap, the merge)
        self._lines = FenceLines(self._read_file) if python else None
        self._shown: list[str] = []  # non-Python: everything
        self._read: tuple[str, TopLevel | None] | None = None  # the last text read and its top level

    @property
    def held_lines(self) -> tuple[int, int] | None:
        """The file's definition that the item being written will replace (none shown meanwhile)."""
        return self._lines.held_lines if self._lines is not None else None

    def feed(self, text: str) -> None:
        shown = self._lines.feed(text) if self._lines is not None else text
        if not shown:
            return
        if self._lines is None:
            self._shown.append(shown)
        if self.applier is None:
            self._start()
        assert self.applier is not None
        self.applier.feed(shown)

    def close(self) -> None:
        """The fence closed: the preview's last line is written."""
        if self._lines is not None:
            self._lines.finish()
        if self.applier is not None:
            self.applier.finish()

    def _start(self) -> None:
        """The first line to show: a blank line after the file's text, then the preview."""
        snapshot = FileSnapshot.take(self._doc, self._ytext)
        self.gap = separator(snapshot.text)
        if self.gap:
            with self._doc.transaction(origin=self._origin):
                self._ytext.insert(snapshot.size, self.gap)
            self.transactions += 1
            snapshot = FileSnapshot(snapshot.text + self.gap, self._doc.get_state(), snapshot.size + len(self.gap))
        text = snapshot.text
        self.applier = LineApplier(
            doc=self._doc, ytext=self._ytext, origin=self._origin, snapshot=snapshot,
            first_line=text.count("\n"), old_lines=(), offset=len(text),
        )

    def _shown_text(self) -> str:
        return "".join(self._lines.shown if self._lines is not None else self._shown)

    def _cut(self, current: str) -> tuple[int, int] | None:
        """The preview (with its gap) in ``current``, in code points: None when there is none,
        or when its gap is gone (someone deleted it)."""
        if self.applier is None:
            return None
        start, end = self.applier.region
        start -= utf8_length(self.gap)
        if start < 0:
            return None
        if current.isascii():
            return start, end
        data = current.encode()
        if not (_boundary(data, start) and _boundary(data, end)):
            return None  # the region is not where the file's characters are: taken as typed into
        return len(data[:start].decode()), len(data[:end].decode())

    def _read_file(self) -> TopLevel | None:
        """The file's top level without the preview (read again only when it changed)."""
        current = str(self._ytext)
        cut = self._cut(current)
        text = current if cut is None else current[: cut[0]] + current[cut[1] :]
        if self._read is None or self._read[0] != text:
            self._read = (text, read_existing(text))
        return self._read[1]

    def merge(self, code: str) -> MergeResult:
        """Take the preview out and merge ``code`` into the file as it is now (one transaction)."""
        current = str(self._ytext)
        cut = self._cut(current)
        typed_into = cut is None or current[cut[0] : cut[1]] != self.gap + self._shown_text()
        if self.applier is not None and typed_into:
            return self._merge_held(current)  # someone typed into the preview: it stays
        start, end = cut if cut is not None else (len(current), len(current))
        base = current[:start] + current[end:]
        plan = plan_merge(base, code, python=self.python, original=self.original)
        if plan.report.inserted and cut is not None:
            # The code goes at the end anyway: where the preview is, completed with what was held.
            splices: list[Splice] = [Splice(start, end, self.gap + code)]
            first = current[: start + len(self.gap)].count("\n") + 1
            lines: tuple[int, int] | None = (first, first + code.rstrip("\n").count("\n"))
        else:
            splices, lines = _through_cut(plan.splices, start, end), plan.lines
        self._apply(current, splices)
        return MergeResult(plan.report, lines, plan.conflicts)

    def _merge_held(self, current: str) -> MergeResult:
        """The preview was typed into: it stays as it is, and the code it did not show (the
        definitions the file had) merges into the file around it."""
        held = self._lines.held if self._lines is not None else ""
        if not held.strip():
            return MergeResult(MergeReport(inserted=True), None)
        plan = plan_merge(current, held, python=self.python, original=self.original)
        self._apply(current, list(plan.splices))
        return MergeResult(plan.report, plan.lines, plan.conflicts)

    def _apply(self, current: str, splices: list[Splice]) -> None:
        """Make ``splices`` of ``current`` (ascending), each narrowed to what changes, in one
        transaction (none when nothing changes)."""
        made = [
            one for one in (narrowed(current[s.start : s.stop], s.start, s.text) for s in splices) if one is not None
        ]
        if not made:
            return
        with self._doc.transaction(origin=self._origin):
            for splice in reversed(made):
                at = utf8_length(current[: splice.start])
                if splice.stop > splice.start:
                    del self._ytext[at : at + utf8_length(current[splice.start : splice.stop])]
                if splice.text:
                    self._ytext.insert(at, splice.text)
        self.transactions += 1


def _through_cut(splices: tuple[Splice, ...], start: int, end: int) -> list[Splice]:
    """Splices of the text without ``[start, end)`` as splices of the text with it, which
    take that range out too: what is inserted where it was replaces it."""
    gone = end - start
    out: list[Splice] = []
    at_cut: list[str] = []  # insertions right where the range was, in order
    covered = gone == 0
    for splice in splices:
        first = splice.start if splice.start <= start else splice.start + gone
        last = splice.stop if splice.stop <= start else splice.stop + gone
        if first == last == start:
            at_cut.append(splice.text)
            continue
        if first <= start and last >= end and gone:
            covered = True
        out.append(Splice(first, last, splice.text))
    if not covered or at_cut:
        place = next((index for index, splice in enumerate(out) if splice.start >= start), len(out))
        if covered:  # a splice already takes the range out: the insertions go before it
            out.insert(place, Splice(start, start, "".join(at_cut)))
        else:
            out.insert(place, Splice(start, end, "".join(at_cut)))
    return out


def _boundary(data: bytes, at: int) -> bool:
    """Whether the UTF-8 byte offset ``at`` falls between two characters of ``data``."""
    return at >= len(data) or (data[at] & 0xC0) != 0x80
