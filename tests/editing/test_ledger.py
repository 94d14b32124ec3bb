from __future__ import annotations

import json

from spark_ide.editing import (
    BlockStatus,
    EditState,
    FailureReason,
    Ledger,
    Outcome,
    RollbackReason,
    TurnEditor,
)
from spark_ide.editing.merge import MergeReport
from spark_ide.editing.parse_events import BlockKind

from .support import Block, build_stream, make_doc

APP = "def a():\n    return 1\n\ndef b():\n    return 1\n"


def status(
    block: int,
    state: EditState,
    *,
    lines: tuple[int, int] | None = None,
    reason: str | None = None,
    conflicts: tuple[int, ...] = (),
) -> BlockStatus:
    return BlockStatus(
        turn="t7",
        block=block,
        path="app.py",
        kind=BlockKind.EDIT,
        state=state,
        lines=lines,
        reason=reason,
        conflicts=conflicts,
    )


def test_it_records_the_latest_state_of_each_block() -> None:
    ledger = Ledger("t7")
    ledger.record(status(0, EditState.LOCATING))
    assert ledger.entry(0).outcome is Outcome.IN_FLIGHT
    ledger.record(status(0, EditState.APPLIED, lines=(3, 4)))
    assert ledger.entry(0).outcome is Outcome.APPLIED
    assert ledger.counts()["applied"] == 1
    assert ledger.counts()["in_flight"] == 0


def test_it_tells_conflicts_rollbacks_and_reverts_apart() -> None:
    ledger = Ledger("t7")
    ledger.record(status(0, EditState.APPLIED, conflicts=(5,)))
    ledger.record(status(1, EditState.ROLLED_BACK, reason=RollbackReason.CANCELLED))
    ledger.record(status(2, EditState.ROLLED_BACK, reason=RollbackReason.REVERTED))
    assert [e.outcome for e in ledger.entries] == [
        Outcome.CONFLICTED,
        Outcome.ROLLED_BACK,
        Outcome.REVERTED,
    ]


def test_it_renders_a_compact_prompt_for_the_model() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t7")
    blocks = [
        Block("edit", "app.py", "def a():\n", "def a(x):\n"),
        Block("edit", "app.py", "    return 1\n", "    return 2\n"),
        Block("edit", "gone.py", "x\n", "y\n"),
    ]
    editor.feed(build_stream(blocks)[0])
    editor.finish()
    assert editor.ledger.as_prompt() == (
        "Edit blocks of turn t7:\n"
        "- block 0 <edit> app.py lines 1-1: applied\n"
        "- block 1 <edit> app.py: failed (ambiguous_match: "
        f"{FailureReason.AMBIGUOUS_MATCH.explanation}); candidates at lines 2, 5\n"
        "- block 2 <edit> gone.py: failed (file_not_found: "
        f"{FailureReason.FILE_NOT_FOUND.explanation})"
    )


def test_it_says_so_when_a_turn_had_no_blocks() -> None:
    assert Ledger("t1").as_prompt() == "Turn t1: no edit blocks."


def test_it_serialises_entries_as_json_ready_dicts() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t7")
    editor.feed(build_stream([Block("write", "n.py", "", "x\n")])[0])
    editor.finish()
    dicts = editor.ledger.as_dicts()
    assert json.loads(json.dumps(dicts)) == [
        {
            "block": 0,
            "path": "n.py",
            "kind": "write",
            "outcome": "applied",
            "lines": [1, 1],
            "reason": None,
            "candidates": [],
            "conflicts": [],
            "merge": None,
        }
    ]


def test_it_tells_how_a_fence_merged_in_one_line_each() -> None:
    ledger = Ledger("t8")
    reports = [
        MergeReport(replaced=("is_prime",), added=("import math", "is_even")),
        MergeReport(inserted=True),
        MergeReport(),
        MergeReport(inserted=False),
    ]
    for block, report in enumerate(reports):
        ledger.record(
            BlockStatus("t8", block, "main.py", BlockKind.WRITE, EditState.APPLIED, (3, 4), fenced=True, merge=report)
        )
    assert [entry.outcome for entry in ledger.entries] == [
        Outcome.APPLIED, Outcome.APPLIED, Outcome.UNCHANGED, Outcome.UNCHANGED,
    ]
    assert ledger.as_prompt() == (
        "Edit blocks of turn t8:\n"
        "- block 0 <write> main.py lines 3-4: applied (merged: replaced is_prime; added import math, is_even)\n"
        "- block 1 <write> main.py lines 3-4: applied (inserted at the end of the file)\n"
        "- block 2 <write> main.py lines 3-4: unchanged (the file already had this code)\n"
        "- block 3 <write> main.py lines 3-4: unchanged (the file already had this code)"
    )
    assert ledger.as_dicts()[1]["merge"] == {"inserted": True}
