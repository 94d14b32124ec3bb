"""``doc_rules.LiveDocument``: its files' texts are read once until the document changes, by
anyone (the model's edits, a page's update, a replacement), and each caller has its own dict."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Text

from spark_ide.editing.document import document_from_texts
from spark_ide.editing.files import workspace_files
from spark_ide.live.doc_rules import LiveDocument


def _document(texts: dict[str, str]) -> LiveDocument:
    updates: list[bytes] = []
    live = LiveDocument(updates.append)
    live.swap(document_from_texts(texts, "test"), 1)
    return live


def test_the_texts_follow_every_change_of_the_document() -> None:
    live = _document({"a.py": "x = 1\n"})
    assert live.texts() == {"a.py": "x = 1\n"}
    files = workspace_files(live.doc)
    text = files["a.py"]
    assert isinstance(text, Text)
    text += "y = 2\n"  # an edit, its own transaction
    assert live.texts() == {"a.py": "x = 1\ny = 2\n"}
    with live.doc.transaction():
        files["b.py"] = Text("z = 3\n")
    assert live.texts() == {"a.py": "x = 1\ny = 2\n", "b.py": "z = 3\n"}
    page: Doc[Any] = Doc()  # a page's update, applied as the room applies one
    page.apply_update(live.doc.get_update())
    page_files = workspace_files(page)
    del page_files["a.py"]
    live.doc.apply_update(page.get_update(live.doc.get_state()))
    assert live.texts() == {"b.py": "z = 3\n"}


def test_a_replacement_brings_its_own_texts_and_a_caller_cannot_change_the_kept_ones() -> None:
    live = _document({"a.py": "old\n"})
    mine = live.texts()
    mine["a.py"] = "changed by the caller"
    assert live.texts() == {"a.py": "old\n"}
    live.swap(document_from_texts({"c.py": "new\n"}, "replace"), 2)
    assert live.texts() == {"c.py": "new\n"}
