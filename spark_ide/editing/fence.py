"""A small model's code fence into a file that already has content: preview, then merge.

While the fence streams, its lines are written after the file's text (following a blank
line), so people watch the code arrive. When it closes, the preview is taken out and the
code is merged into the file by structure (`merge.py`), in one transaction under the
block's origin that touches only the changed ranges. If the plan is to insert the code at
the end anyway, the preview simply stays. So does a preview somebody typed into while it
streamed, and a definition somebody changed meanwhile is kept as they left it (a conflict):
their typing is never lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing.lines import utf8_length
from spark_ide.editing.merge import MergeReport, plan_merge


@dataclass(frozen=True, slots=True)
class MergeResult:
    report: MergeReport
    lines: tuple[int, int] | None  # where the code is now (None: keep the preview's lines)
    transactions: int  # tracked transactions made (0 or 1)
    conflicts: tuple[int, ...] = ()  # lines of definitions kept because a person changed them


@dataclass(frozen=True, slots=True)
class FencePreview:
    """The fence's preview: the file's text when it opened, `gap` (the blank line put
    before the preview) and whether it merges as Python."""

    original: str
    gap: str
    python: bool

    def merge(self, doc: Doc[Any], ytext: Text, origin: str, region: tuple[int, int], code: str) -> MergeResult:
        """Replace the preview (byte `region`, after the gap) with `code` merged into the file."""
        current = str(ytext)
        data = current.encode()
        start, end = region
        start -= utf8_length(self.gap)
        if start < 0 or data[start:end] != (self.gap + code).encode():
            return MergeResult(MergeReport(inserted=True), None, 0)  # someone typed into it
        base = (data[:start] + data[end:]).decode()
        plan = plan_merge(base, code, python=self.python, original=self.original)
        if plan.report.inserted:
            return MergeResult(plan.report, None, 0)
        with doc.transaction(origin=origin):
            if end > start:
                del ytext[start:end]
            for splice in reversed(plan.splices):
                at = utf8_length(base[: splice.start])
                if splice.stop > splice.start:
                    del ytext[at : at + utf8_length(base[splice.start : splice.stop])]
                if splice.text:
                    ytext.insert(at, splice.text)
        changed = end > start or bool(plan.splices)
        return MergeResult(plan.report, plan.lines, 1 if changed else 0, plan.conflicts)
