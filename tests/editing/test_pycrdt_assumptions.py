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


def test_a_raw_observer_sees_the_origin_hash_and_the_same_byte_delta() -> None:
    """The TurnEditor observes ``ytext.integrated`` and compares the raw transaction's origin
    with ``hash_origin`` before it reads a delta (pycrdt's ``observe`` computes every delta)."""
    from pycrdt._transaction import hash_origin

    doc, ytext = fresh("é\nb\n")
    seen: list[tuple[object, object]] = []
    subscription = ytext.integrated.observe(lambda event: seen.append((event.transaction.origin(), event.delta)))
    with doc.transaction(origin="ai:t:0"):
        ytext.insert(len("é\n".encode()), "X")
    with doc.transaction():
        del ytext[0:2]
    subscription.drop()
    with doc.transaction(origin="later"):
        ytext.insert(0, "z")
    assert seen == [(hash_origin("ai:t:0"), [{"retain": 3}, {"insert": "X"}]), (None, [{"delete": 2}])]


def test_an_undo_manager_keeps_what_its_origins_delete_from_garbage_collection() -> None:
    """Why a document the model rewrites turn after turn grows (issue 12): the deleted text of
    a tracked origin stays in the document even after its undo manager is gone, where an
    untracked rewrite is collected."""
    sizes = {}
    for tracked in (False, True):
        doc, ytext = fresh("")
        for turn in range(20):
            undo = UndoManager(scopes=[workspace_files(doc)], capture_timeout_millis=0)
            if tracked:
                undo.include_origin(f"ai:{turn}:0")
            with doc.transaction(origin=f"ai:{turn}:0"):
                del ytext[0 : len(ytext)]
                ytext.insert(0, f"line {turn} " * 50)
            del undo
        sizes[tracked] = len(doc.get_update())
    # 19 rewrites of 400 characters each were deleted: gone untracked, all still there tracked.
    assert sizes[False] < 1_000 and sizes[True] > 19 * 390
