"""Keeping or undoing one applied block of a turn on its own (editing.review)."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc

from spark_ide.editing import (
    BlockStatus,
    EditState,
    Outcome,
    ReviewRefused,
    RollbackReason,
    TurnEditor,
    workspace_files,
)

from .support import Block, build_stream, make_doc, read, read_files

APP = "".join(f"line {n}\n" for n in range(1, 21))
THREE = [
    Block("edit", "app.py", "line 2\n", "line 2 changed\n"),
    Block("edit", "app.py", "line 8\n", "line 8 changed\nline 8b\n"),
    Block("edit", "app.py", "line 15\n", "line 15 changed\n"),
]


def _applied(blocks: list[Block], files: dict[str, str] | None = None) -> tuple[TurnEditor, Doc[Any]]:
    doc = make_doc(files or {"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(blocks)[0])
    editor.finish()
    return editor, doc


def _type(doc: Doc[Any], path: str, at_text: str, text: str) -> None:
    ytext = workspace_files(doc)[path]
    now = str(ytext)
    at = len(now[: now.index(at_text)].encode())  # Y.Text positions are UTF-8 bytes
    with doc.transaction(origin="person"):
        ytext.insert(at, text)


def test_it_undoes_the_middle_block_alone_and_keeps_a_person_s_typing() -> None:
    editor, doc = _applied(THREE)
    _type(doc, "app.py", "line 12\n", "# ada was here\n")  # someone types, away from block 1
    events = editor.undo_block(1, "ada")
    text = read(doc, "app.py")
    assert "line 2 changed\n" in text and "line 15 changed\n" in text
    assert "line 8 changed" not in text and "line 8b" not in text and "line 7\nline 8\nline 9\n" in text
    assert "# ada was here\nline 12\n" in text
    assert [(e.block, e.state, e.reason, e.message) for e in events if isinstance(e, BlockStatus)] == [
        (1, EditState.ROLLED_BACK, RollbackReason.UNDONE, "undone by ada"),
    ]
    assert editor.ledger.entry(1).outcome is Outcome.UNDONE
    assert "block 1 <edit> app.py: undone (undone by ada: it is not in the file" in editor.ledger.as_prompt()
    assert editor.review(1) == ("undone", "ada")
    assert editor.reviewable() == (0, 2)
    [note] = editor.take_notes()
    assert note.startswith("ada undid block 1 (app.py) in turn t1: its change is no longer in app.py")
    assert "Do not apply it again" in note
    assert editor.take_notes() == []


def test_a_block_is_undone_while_the_turn_still_streams_the_next_one() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    stream = build_stream(THREE)[0]
    cut = stream.index("line 15 changed") + len("line 15 ch")
    editor.feed(stream[:cut])  # block 2 is streaming
    assert editor.ledger.entry(2).outcome is Outcome.IN_FLIGHT
    with pytest.raises(ReviewRefused, match="still being written"):
        editor.undo_block(2, "ada")
    editor.undo_block(1, "ada")
    editor.feed(stream[cut:])
    editor.finish()
    expected = APP.replace("line 2\n", "line 2 changed\n").replace("line 15\n", "line 15 changed\n")
    assert read(doc, "app.py") == expected
    # The whole turn can still be reverted: the undone block stays out, the others go.
    editor.revert()
    assert read(doc, "app.py") == APP
    assert [e.outcome for e in editor.ledger.entries] == [Outcome.REVERTED, Outcome.UNDONE, Outcome.REVERTED]


def test_the_block_in_flight_rolls_back_cleanly_after_an_earlier_block_was_undone() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    stream = build_stream(THREE)[0]
    editor.feed(stream[: stream.index("line 15 changed") + 9])
    editor.undo_block(0, "bob")
    editor.cancel()  # a stop: block 2 in flight goes, block 1 stays
    assert read(doc, "app.py") == APP.replace("line 8\n", "line 8 changed\nline 8b\n")


def test_an_undo_of_lines_a_person_changed_since_is_refused_and_changes_nothing() -> None:
    editor, doc = _applied(THREE)
    _type(doc, "app.py", "line 8b\n", "    # mine\n")  # inside block 1's lines
    before = read_files(doc)
    with pytest.raises(ReviewRefused, match="were changed since it applied") as refused:
        editor.undo_block(1, "ada")
    assert refused.value.conflict
    assert read_files(doc) == before
    assert editor.ledger.entry(1).outcome is Outcome.APPLIED
    assert editor.review(1) is None
    # A line right beside the block counts too (a three-way merge would call it a clash).
    editor2, doc2 = _applied(THREE)
    _type(doc2, "app.py", "line 9\n", "x")
    with pytest.raises(ReviewRefused):
        editor2.undo_block(1, "ada")


def test_keep_decides_for_good_and_bad_requests_say_why() -> None:
    blocks = [*THREE, Block("edit", "app.py", "no such line\n", "x\n")]
    editor, _ = _applied(blocks)
    editor.keep_block(0, "ada")
    with pytest.raises(ReviewRefused, match="already kept by ada"):
        editor.undo_block(0, "bob")
    with pytest.raises(ReviewRefused, match="has no block 9"):
        editor.undo_block(9, "ada")
    with pytest.raises(ReviewRefused, match="did not apply"):
        editor.keep_block(3, "ada")
    editor.undo_block(2, "ada")
    with pytest.raises(ReviewRefused, match="already undone by ada"):
        editor.keep_block(2, "ada")
    assert editor.reviewable() == (1,)
    editor.revert()
    with pytest.raises(ReviewRefused, match="was reverted"):
        editor.undo_block(1, "ada")


def test_undoing_a_write_that_created_a_file_removes_it() -> None:
    editor, doc = _applied([Block("write", "lib/new.py", "", "NEW = 1\n"), THREE[0]])
    editor.undo_block(0, "ada")
    assert read_files(doc) == {"app.py": APP.replace("line 2\n", "line 2 changed\n")}


def test_a_hunk_with_non_ascii_text_is_found_and_undone() -> None:
    files = {"app.py": "é = 1\n" + APP}
    editor, doc = _applied([Block("edit", "app.py", "line 2\n", "ligne 2 — été\n"), THREE[1]], files)
    _type(doc, "app.py", "line 1\n", "ünïcode\n")
    editor.undo_block(0, "ada")
    assert read(doc, "app.py") == "é = 1\nünïcode\n" + APP.replace("line 8\n", "line 8 changed\nline 8b\n")


PATCH = (
    "*** Begin Patch\n*** Update File: app.py\n"
    "@@\n line 4\n line 5\n line 6\n-line 7\n+line 7 changed\n line 8\n line 9\n line 10\n"
    "@@\n line 15\n-line 16\n+line 16 changed\n line 17\n"
    "*** End Patch\n"
)


def _patched() -> tuple[TurnEditor, Doc[Any]]:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    call.feed(PATCH)
    call.finish()
    editor.finish()
    return editor, doc


def test_a_person_s_edit_of_a_line_the_hunk_kept_is_merged_not_refused() -> None:
    editor, doc = _patched()
    _type(doc, "app.py", "line 4\n", "# ada's note\n")  # inside the hunk's context, away from its change
    editor.undo_block(0, "bob")
    expected = APP.replace("line 4\n", "# ada's note\nline 4\n").replace("line 16\n", "line 16 changed\n")
    assert read(doc, "app.py") == expected
    assert editor.ledger.entry(0).outcome is Outcome.UNDONE
    # The undo history no longer describes the file: the whole turn reverts as text.
    editor.revert()
    assert read(doc, "app.py") == APP.replace("line 4\n", "# ada's note\nline 4\n")


def test_a_person_s_edit_beside_the_hunk_s_change_is_never_overwritten() -> None:
    editor, doc = _patched()
    _type(doc, "app.py", "line 7 changed\n", "# right above the change\n")
    before = read_files(doc)
    with pytest.raises(ReviewRefused, match="cannot be taken out without touching theirs") as refused:
        editor.undo_block(0, "bob")
    assert refused.value.conflict and read_files(doc) == before
    editor.undo_block(1, "bob")  # the other hunk is untouched: it goes
    assert read(doc, "app.py") == before["app.py"].replace("line 16 changed\n", "line 16\n")


def test_after_a_revert_and_restore_a_block_no_longer_undoes_alone() -> None:
    editor, doc = _applied(THREE)
    editor.undo_block(0, "ada")
    editor.revert()
    editor.restore()  # the turn's change back as text; block 0 stays undone
    assert read(doc, "app.py") == APP.replace("line 8\n", "line 8 changed\nline 8b\n").replace(
        "line 15\n", "line 15 changed\n")
    assert [e.outcome for e in editor.ledger.entries] == [Outcome.UNDONE, Outcome.APPLIED, Outcome.APPLIED]
    with pytest.raises(ReviewRefused, match="reverted and restored"):
        editor.undo_block(1, "ada")
    editor.keep_block(1, "ada")  # keeping needs no history
