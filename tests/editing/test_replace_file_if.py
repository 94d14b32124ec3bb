"""``editing.document.replace_file_if``: a write that happens only over the text it was read as."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc

from spark_ide.editing.document import document_texts, move_file, replace_file_if, set_file_text


def test_a_write_happens_only_over_the_text_expected() -> None:
    doc: Doc[Any] = Doc()
    set_file_text(doc, "a.py", "x = 1\n", "test")
    changes: list[bytes] = []
    doc.observe(lambda event: changes.append(bytes(event.update)))
    assert not replace_file_if(doc, "a.py", "x = 2\n", "x = 0\n", "push")  # someone typed since
    assert not replace_file_if(doc, "a.py", "x = 2\n", None, "push")  # read as absent: it is there
    assert not replace_file_if(doc, "b.py", "y\n", "", "push")  # read as empty: there is none
    assert changes == [] and document_texts(doc) == {"a.py": "x = 1\n"}
    assert replace_file_if(doc, "a.py", "x = 2\n", "x = 1\n", "push")
    assert replace_file_if(doc, "b.py", "y\n", None, "push")
    assert replace_file_if(doc, "b.py", None, "y\n", "push")  # a delete, over what was read
    assert document_texts(doc) == {"a.py": "x = 2\n"} and len(changes) == 3


def test_a_move_takes_the_text_as_it_is_in_one_change() -> None:
    doc: Doc[Any] = Doc()
    set_file_text(doc, "a.py", "x = 1\n", "test")
    set_file_text(doc, "b.py", "y\n", "test")
    changes: list[bytes] = []
    doc.observe(lambda event: changes.append(bytes(event.update)))
    assert move_file(doc, "a.py", "b.py", "http") is None  # taken
    assert move_file(doc, "nope.py", "c.py", "http") is None  # no such file
    assert changes == []
    assert move_file(doc, "a.py", "pkg/a.py", "http") == "x = 1\n"
    assert document_texts(doc) == {"b.py": "y\n", "pkg/a.py": "x = 1\n"} and len(changes) == 1


def test_a_write_over_text_with_accents_replaces_just_the_middle() -> None:
    """Y.Text counts UTF-8 bytes: the differing middle is found in characters and cut in bytes
    (it was cut at character offsets: `café x = 1` became `café x =21`)."""
    doc: Doc[Any] = Doc()
    set_file_text(doc, "a.py", "café x = 1\nb\n", "test")
    set_file_text(doc, "a.py", "café x = 2\nb\n", "test")
    assert document_texts(doc) == {"a.py": "café x = 2\nb\n"}
    set_file_text(doc, "a.py", "ça: é 2\nb — ü\n", "test")
    assert document_texts(doc) == {"a.py": "ça: é 2\nb — ü\n"}
