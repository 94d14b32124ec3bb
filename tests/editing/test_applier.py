from __future__ import annotations

from typing import Any

from pycrdt import Doc

from spark_ide.editing import workspace_files
from spark_ide.editing.applier import LineApplier
from spark_ide.editing.snapshot import FileSnapshot

from .support import make_doc, read

FILE = "one\ntwo\nthree\nfour\nfive\n"


def applier_for(doc: Doc[Any], old: str, path: str = "f.txt") -> LineApplier:
    """An applier for the lines `old`, found by plain string search (each test's are unique)."""
    ytext = workspace_files(doc)[path]
    snapshot = FileSnapshot.take(doc, ytext)
    text = snapshot.text
    offset = text.index(old) if old in text else text.index(old.rstrip("\n"))  # a last line
    region = text[offset : offset + len(old)]
    applier = LineApplier(
        doc=doc,
        ytext=ytext,
        origin="ai:t:0",
        snapshot=snapshot,
        first_line=text.count("\n", 0, offset),
        old_lines=tuple(region.splitlines(keepends=True)),
        offset=offset,
    )

    def forward(event: Any) -> None:  # as the turn's editor forwards them: not the applier's own edits
        if event.transaction.origin != "ai:t:0":
            applier.on_delta(event.delta)

    ytext.observe(forward)
    return applier


def test_it_keeps_the_unfinished_line_out_of_the_document() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\n")
    applier.feed("TW")
    assert applier.ghost == "TW"
    assert applier.ghost_line == 2
    assert read(doc, "f.txt") == FILE
    applier.feed("O\nth")
    assert read(doc, "f.txt") == "one\nTWO\ntwo\nthree\nfour\nfive\n"
    assert applier.ghost == "th"
    assert applier.ghost_line == 3


def test_it_keeps_lines_equal_to_the_next_old_line_without_touching_them() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\nfour\n")
    applier.feed("two\nthree\n")
    assert applier.transactions == 0
    applier.feed("FOUR\n")
    assert applier.finish() == ()
    assert read(doc, "f.txt") == "one\ntwo\nthree\nFOUR\nfive\n"
    assert applier.transactions == 2


def test_it_deletes_passed_old_lines_before_the_block_ends() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\nfour\n")
    applier.feed("TWO\nfour\n")
    assert read(doc, "f.txt") == "one\nTWO\nfour\nfive\n"
    applier.finish()
    assert read(doc, "f.txt") == "one\nTWO\nfour\nfive\n"


def test_it_deletes_unkept_old_lines_at_the_end() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\n")
    applier.feed("2\n")
    assert read(doc, "f.txt") == "one\n2\ntwo\nthree\nfour\nfive\n"
    applier.finish()
    assert read(doc, "f.txt") == "one\n2\nfour\nfive\n"


def test_it_writes_a_final_line_without_newline() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "five\n")
    applier.feed("last")
    applier.finish()
    assert read(doc, "f.txt") == "one\ntwo\nthree\nfour\nlast"


def test_it_replaces_a_last_line_that_has_no_newline() -> None:
    doc = make_doc({"f.txt": "a\nb"})
    applier = applier_for(doc, "b\n")
    applier.feed("B1\nB2\n")
    applier.finish()
    assert read(doc, "f.txt") == "a\nB1\nB2\n"


def test_it_places_lines_correctly_after_multibyte_characters() -> None:
    doc = make_doc({"f.txt": "héllo 🎉\nwörld\nend\n"})
    applier = applier_for(doc, "wörld\n")
    applier.feed("wörld ✓\n")
    applier.finish()
    assert read(doc, "f.txt") == "héllo 🎉\nwörld ✓\nend\n"


def test_it_appends_lines_in_order_to_an_empty_file() -> None:
    doc = make_doc({"f.txt": ""})
    ytext = workspace_files(doc)["f.txt"]
    applier = LineApplier(
        doc=doc,
        ytext=ytext,
        origin="ai:t:0",
        snapshot=FileSnapshot.take(doc, ytext),
        first_line=0,
        old_lines=(),
        offset=0,
    )
    applier.feed("a\nb\nc")
    applier.finish()
    assert read(doc, "f.txt") == "a\nb\nc"


def test_it_keeps_an_old_line_a_person_changed_and_reports_a_conflict() -> None:
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\nfour\n")
    applier.feed("2\n")
    ytext = workspace_files(doc)["f.txt"]
    with doc.transaction(origin="human"):
        position = str(ytext).index("three") + len("three")
        ytext.insert(position, " (edited)")
    applier.feed("3\n4\n")
    assert applier.finish() == (3,)
    assert read(doc, "f.txt") == "one\n2\n3\n4\nthree (edited)\nfive\n"


def test_it_does_not_look_far_ahead_for_a_line_to_keep() -> None:
    lines = [f"line {n}\n" for n in range(80)]
    doc = make_doc({"f.txt": "".join(lines)})
    applier = applier_for(doc, "".join(lines))
    applier.feed("line 70\n")
    assert read(doc, "f.txt") == "line 70\n" + "".join(lines)
    applier.finish()
    assert read(doc, "f.txt") == "line 70\n"


def test_it_follows_non_ascii_text_a_person_types_above_the_region() -> None:
    doc = make_doc({"f.txt": "é🎉\n" + FILE})
    applier = applier_for(doc, "two\nthree\n")
    applier.feed("2\n")
    ytext = workspace_files(doc)["f.txt"]
    with doc.transaction(origin="human"):
        ytext.insert(0, "ünïcödé 🎉 note\n")
    applier.feed("3\n")
    assert applier.finish() == ()
    assert read(doc, "f.txt") == "ünïcödé 🎉 note\né🎉\none\n2\n3\nfour\nfive\n"


def test_it_leaves_text_typed_at_the_end_of_the_file_after_the_region() -> None:
    doc = make_doc({"f.txt": "a\nb\n"})
    applier = applier_for(doc, "b\n")
    ytext = workspace_files(doc)["f.txt"]
    with doc.transaction(origin="human"):
        ytext.insert(len(ytext), "typed\n")
    applier.feed("B\nC\n")
    applier.finish()
    assert read(doc, "f.txt") == "a\nB\nC\ntyped\n"


def test_the_lines_a_chunk_inserts_one_after_another_go_in_one_transaction() -> None:
    """A chunk that completes several lines (a step of a fast answer) inserts each run of new
    lines in one transaction, split where an old line is kept or passed to; the file is the
    same as fed line by line."""
    new = "zero\nA\nB\ntwo\nC\nD\nE\nfour\nF\n"
    by_line = make_doc({"f.txt": FILE})
    one_by_one = applier_for(by_line, "two\nthree\nfour\n")
    for line in new.splitlines(keepends=True):
        one_by_one.feed(line)
    one_by_one.finish()
    doc = make_doc({"f.txt": FILE})
    applier = applier_for(doc, "two\nthree\nfour\n")
    updates: list[bytes] = []
    doc.observe(lambda event: updates.append(event.update))
    applier.feed(new)
    # [zero A B] inserted, "two" kept, [C D E] inserted, "four" passes "three" (deleted), [F]
    assert applier.transactions == len(updates) == 4
    assert applier.finish() == ()
    assert read(doc, "f.txt") == read(by_line, "f.txt") == "one\nzero\nA\nB\ntwo\nC\nD\nE\nfour\nF\nfive\n"
    assert one_by_one.transactions == 8
