"""The pycrdt behaviour the engine relies on, pinned so an upgrade that changes it fails here."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Text, TextEvent, UndoManager

from spark_ide.editing import workspace_files


def fresh(text: str) -> tuple[Doc[Any], Text]:
    doc: Doc[Any] = Doc()
    files = workspace_files(doc)
    with doc.transaction():
        files["f"] = Text(text)
    return doc, files["f"]


def test_text_positions_and_change_deltas_count_utf8_bytes() -> None:
    _doc, ytext = fresh("é🎉\nb\n")
    deltas: list[object] = []

    def record(event: TextEvent) -> None:
        deltas.append(event.delta)  # type: ignore[attr-defined]

    ytext.observe(record)
    assert len(ytext) == len("é🎉\nb\n".encode())
    ytext.insert(len("é🎉\n".encode()), "X")
    assert str(ytext) == "é🎉\nXb\n"
    assert deltas == [[{"retain": 7}, {"insert": "X"}]]


def test_an_undo_manager_with_zero_timeout_keeps_each_transaction_apart() -> None:
    doc, ytext = fresh("a\n")
    undo = UndoManager(scopes=[workspace_files(doc)], capture_timeout_millis=0)
    undo.include_origin("ai:t:0")
    for line in ("b\n", "c\n"):
        with doc.transaction(origin="ai:t:0"):
            ytext.insert(len(ytext), line)
    with doc.transaction(origin="human"):
        ytext.insert(0, "h\n")
    assert len(undo.undo_stack) == 2
    undo.undo()
    assert str(ytext) == "h\na\nb\n"


def test_undo_keeps_characters_typed_inside_undone_text() -> None:
    doc, ytext = fresh("a\n")
    undo = UndoManager(scopes=[workspace_files(doc)], capture_timeout_millis=0)
    undo.include_origin("ai:t:0")
    with doc.transaction(origin="ai:t:0"):
        ytext.insert(2, "model\n")
    with doc.transaction(origin="human"):
        ytext.insert(4, "!")
    undo.undo()
    assert str(ytext) == "a\n!"
