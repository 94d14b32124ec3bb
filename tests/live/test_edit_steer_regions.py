"""Steering by editing, the pure parts (issue 33): which changes touch the lines a turn wrote or
writes, the spans the turn's edit engine reports, and what a region's change says to the model."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing import TurnEditor
from spark_ide.editing.files import workspace_files
from spark_ide.editing.runner import shift_through
from spark_ide.live.edit_steer import region_change, removed_and_added, steer_text, touches


def test_a_change_s_spans_before_and_after_it() -> None:
    old, new = removed_and_added([{"retain": 4}, {"delete": 2}, {"insert": "xyz"}, {"retain": 1}, {"insert": "é"}])
    assert old == [(4, 6), (6, 6), (7, 7)]
    assert new == [(4, 4), (4, 7), (8, 10)]  # (é is two bytes)


def test_what_touches_a_region() -> None:
    assert touches([(5, 5)], 5, 10, open_end=False)  # typed at its start
    assert not touches([(10, 10)], 5, 10, open_end=False)  # right after an applied block: not its lines
    assert touches([(10, 10)], 5, 10, open_end=True)  # where the block in flight writes next
    assert touches([(3, 6)], 5, 10, open_end=False)  # a deletion into it
    assert not touches([(0, 5)], 5, 10, open_end=True)  # a deletion that ends where it starts
    assert shift_through(10, [{"retain": 2}, {"insert": "ab"}]) == 12
    assert shift_through(10, [{"retain": 2}, {"delete": 20}]) == 2


def test_the_region_s_change_and_what_the_model_is_told() -> None:
    before = "a\nb\nc\nd\ne\nf\ng\n"
    after = "a\nb\nC!\nd\ne\nf\ng\nmore\n"  # line 3 changed by a person; the model added a line at the end
    change = region_change(before, after, (2, 2))
    assert change is not None and change.lines == (3, 3)
    assert change.diff == "@@ -1,5 +1,5 @@\n a\n b\n-c\n+C!\n d\n e\n"
    assert region_change(before, before, (2, 2)) is None  # typed and taken back
    text = steer_text("a.py", change, "Ana")
    assert text.startswith("Ana edited what you were writing in a.py (line 3 now)")
    assert '<diff path="a.py">\n@@ -1,5 +1,5 @@' in text and "keep it" in text


def test_the_turn_reports_its_block_in_flight_and_applied_blocks_and_hears_others() -> None:
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction():
        files["a.py"] = Text("x = 1\ny = 2\n")
    editor = TurnEditor(doc, "t1")
    heard: list[tuple[str, list[dict[str, Any]]]] = []
    editor.on_foreign = lambda path, delta: heard.append((path, delta))
    editor.feed('<edit path="a.py">\n<old_text>\nx = 1\n</old_text>\n<new_text>\nx = 10\nx2 = 20\n')
    ((path, start, end, flight),) = editor.written_regions()
    assert (path, flight) == ("a.py", True)
    text = str(files["a.py"])
    assert text.encode()[start:end] == b"x = 10\nx2 = 20\nx = 1\n"  # written, and the old line not reached
    with doc.transaction():
        files["a.py"].insert(len(text), "# mine\n")  # someone else, at the end
    assert heard == [("a.py", [{"retain": len(text)}, {"insert": "# mine\n"}])]
    editor.feed("</new_text>\n</edit>\n")
    ((path, start, end, flight),) = editor.written_regions()
    assert not flight and str(files["a.py"]).encode()[start:end] == b"x = 10\nx2 = 20\n"
    with doc.transaction():
        files["a.py"].insert(0, "# top\n")  # the applied block's span moves with it
    ((_, moved, _, _),) = editor.written_regions()
    assert moved == start + len("# top\n")


def test_the_turn_reads_the_files_it_wrote_in_as_they_are_now() -> None:
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction():
        files["a.py"] = Text("x = 1\n")
        files["b.py"] = Text("untouched\n")
    editor = TurnEditor(doc, "t1")
    assert editor.written_texts() == {}  # nothing written yet
    editor.feed('<edit path="a.py">\n<old_text>\nx = 1\n</old_text>\n<new_text>\nx = 10\n')
    assert editor.written_texts() == {"a.py": "x = 10\nx = 1\n"}  # the block in flight's file, as it is
    with doc.transaction():
        files["a.py"].insert(0, "# mine\n")
    assert editor.written_texts() == {"a.py": "# mine\nx = 10\nx = 1\n"}


def test_cut_short_keeps_the_block_in_flight_as_the_file_has_it() -> None:
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction():
        files["a.py"] = Text("x = 1\n")
    editor = TurnEditor(doc, "t1")
    editor.feed('<edit path="a.py">\n<old_text>\nx = 1\n</old_text>\n<new_text>\nx = 10\nx = 2')
    with doc.transaction():
        files["a.py"].insert(6, "  # mine")  # a person's change of the model's written line
    events = editor.cancel(keep_in_flight=True)
    assert str(files["a.py"]) == "x = 10  # mine\nx = 1\n"  # theirs kept; the unfinished "x = 2" never written
    assert [e.state.value for e in events if hasattr(e, "state")] == ["applied"]
    assert editor.ledger.entries[0].outcome.value == "applied"


def test_a_small_model_s_preview_cut_short_stays_with_the_person_s_text() -> None:
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    original = "def add(a, b):\n    return a + b\n"
    with doc.transaction():
        files["a.py"] = Text(original)
    editor = TurnEditor(doc, "t1", fence_path="a.py")  # a small model: its fence is the open file
    editor.feed("Here:\n```python\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a")
    shown = str(files["a.py"])
    assert shown.startswith(original) and "def sub(a, b):\n    return a - b\n" in shown  # the preview streams
    at = shown.index("a - b") + len("a - b")
    with doc.transaction():
        files["a.py"].insert(at, "  # theirs")
    ((_, start, end, flight),) = editor.written_regions()
    assert flight and start <= at < end
    events = editor.cancel(keep_in_flight=True)
    text = str(files["a.py"])
    assert text.startswith(original) and "    return a - b  # theirs\n" in text and "def mul" not in text
    assert [e.state.value for e in events if hasattr(e, "state")] == ["applied"]
