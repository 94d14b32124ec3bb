"""A turn's own edits cost the same however long the document's history (issue 12).

A file rewritten turn after turn keeps every replaced line as a tombstone, and reading a
change's delta walks the whole text, tombstones included. The TurnEditor must therefore not
build the delta of its own edits (it only needs other people's changes)."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import _base

from spark_ide.editing import TurnEditor, workspace_files

from .support import make_doc

BODY = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))


def _stream(turn: int) -> str:
    return f'Rewriting.\n<write path="app.py">\n{BODY.replace("return x", f"return {turn} * x")}</write>\nDone.\n'


@pytest.fixture
def built_events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of pycrdt events built for observers (each computes its delta)."""
    built: list[str] = []
    original = _base.BaseEvent.__init__

    def counting(self: Any, event: Any, doc: Any) -> None:
        built.append(type(self).__name__)
        original(self, event, doc)

    monkeypatch.setattr(_base.BaseEvent, "__init__", counting)
    return built


def test_own_streamed_edits_build_no_text_event(built_events: list[str]) -> None:
    doc = make_doc({"app.py": BODY})
    for turn in range(3):
        editor = TurnEditor(doc, f"t{turn}")
        for at in range(0, len(_stream(turn)), 7):
            editor.feed(_stream(turn)[at : at + 7])
        editor.finish()
        assert str(workspace_files(doc)["app.py"]) == BODY.replace("return x", f"return {turn} * x")
    assert "TextEvent" not in built_events


def test_a_person_typing_mid_block_still_moves_the_anchors() -> None:
    doc = make_doc({"app.py": BODY})
    editor = TurnEditor(doc, "t1")
    text = _stream(1)
    half = text.index("def f15")
    editor.feed(text[:half])
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin="human"):
        ytext.insert(0, "# typed by a person\n")
    editor.feed(text[half:])
    editor.finish()
    assert str(ytext) == "# typed by a person\n" + BODY.replace("return x", "return 1 * x")
