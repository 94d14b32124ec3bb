from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from pycrdt import Doc

from spark_ide.editing import (
    BlockStatus,
    EditorClosedError,
    EditState,
    Outcome,
    RollbackReason,
    TurnEditor,
    workspace_files,
)
from spark_ide.editing.reasons import RevertUnavailable

from .scenarios import Scenario, scenarios
from .support import Block, build_stream, make_doc, read, read_files

APP = "def a():\n    return 1\n\ndef b():\n    return 2\n"
BLOCKS = [
    Block("edit", "app.py", "def a():\n", "def a(x):\n"),
    Block("write", "lib/new.py", "", "NEW = 1\n"),
    Block("edit", "app.py", "nothing like this\n", "y\n"),
]


def test_it_restores_the_original_files_and_removes_created_ones() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(BLOCKS)[0])
    editor.finish()
    assert "lib/new.py" in workspace_files(doc)
    events = editor.revert()
    assert read_files(doc) == {"app.py": APP}
    assert [(e.block, e.state, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (0, EditState.ROLLED_BACK, RollbackReason.REVERTED),
        (1, EditState.ROLLED_BACK, RollbackReason.REVERTED),
    ]
    outcomes = [entry.outcome for entry in editor.ledger.entries]
    assert outcomes == [Outcome.REVERTED, Outcome.REVERTED, Outcome.FAILED]


def test_it_cancels_a_running_turn_before_reverting_it() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    stream = build_stream(BLOCKS)[0]
    editor.feed(stream[: stream.index("NEW = ")])
    events = editor.revert()
    with pytest.raises(EditorClosedError):
        editor.feed("NEW = 2\n")
    assert read_files(doc) == {"app.py": APP}
    assert [(e.block, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (1, RollbackReason.CANCELLED),
        (0, RollbackReason.REVERTED),
    ]


def test_it_reverts_only_once() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(BLOCKS)[0])
    editor.finish()
    editor.revert()
    assert editor.revert() == []
    assert read_files(doc) == {"app.py": APP}


def test_it_leaves_later_turns_and_human_typing_in_place() -> None:
    doc = make_doc({"app.py": APP})
    first = TurnEditor(doc, "t1")
    first.feed(build_stream([Block("edit", "app.py", "def a():\n", "def a(x):\n")])[0])
    first.finish()
    second = TurnEditor(doc, "t2")
    second.feed(build_stream([Block("edit", "app.py", "    return 2\n", "    return 3\n")])[0])
    second.finish()
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin="human"):
        ytext.insert(0, "# mine\n")
    first.revert()
    assert read(doc, "app.py") == "# mine\n" + APP.replace("return 2", "return 3")


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None)
@given(scenario=scenarios())
def test_revert_restores_the_original_document(scenario: Scenario) -> None:
    doc = make_doc(scenario.files)
    editor = TurnEditor(doc, "t1")
    for at in range(0, len(scenario.stream), 5):
        editor.feed(scenario.stream[at : at + 5])
    editor.finish()
    editor.revert()
    assert read_files(doc) == scenario.files


# -- after the room compacted its document (``TurnEditor.detach``) ------------------------------


def _compacted(doc: Doc[Any], *editors: TurnEditor) -> Doc[Any]:
    """What the room does: a fresh copy of the document, the editors detached onto it."""
    fresh: Doc[Any] = Doc()
    fresh.apply_update(doc.get_update())
    for editor in editors:
        editor.detach(fresh)
    return fresh


def test_a_compacted_document_drops_the_deleted_text_and_a_detached_turn_still_reverts() -> None:
    def body(k: int) -> str:
        return "".join(f"VALUE_{k}_{i} = {i * k}\n" for i in range(60))

    doc = make_doc({"app.py": body(0)})
    turns = []
    for k in range(1, 6):
        editor = TurnEditor(doc, f"t{k}")
        editor.feed(build_stream([Block("write", "app.py", "", body(k))])[0])
        editor.finish()
        turns.append(editor)
    grown = len(doc.get_update())
    fresh = _compacted(doc, *turns)
    assert len(fresh.get_update()) * 3 < grown  # the rewritten text is gone
    assert read_files(fresh) == read_files(doc) == {"app.py": body(5)}
    old = weakref.ref(doc)
    del doc
    gc.collect()
    assert old() is None  # nothing the detached turns keep holds the old document
    events = turns[-1].revert()
    assert read(fresh, "app.py") == body(4)
    assert [(e.state, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (EditState.ROLLED_BACK, RollbackReason.REVERTED)
    ]


def test_a_detached_turn_reverts_around_later_edits_and_removes_the_file_it_created() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(BLOCKS)[0])
    editor.finish()
    fresh = _compacted(doc, editor)
    ytext = workspace_files(fresh)["app.py"]
    with fresh.transaction(origin="human"):
        ytext.insert(len(ytext), "\n# typed later\n")
    editor.revert()
    assert read_files(fresh) == {"app.py": APP + "\n# typed later\n"}


def test_a_detached_turn_whose_lines_were_edited_since_is_refused_and_nothing_changes() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream([Block("edit", "app.py", "def a():\n", "def a(x):\n")])[0])
    editor.finish()
    fresh = _compacted(doc, editor)
    ytext = workspace_files(fresh)["app.py"]
    with fresh.transaction(origin="human"):
        ytext.insert(len("def a(x"), ", y")
    files = read_files(fresh)
    with pytest.raises(RevertUnavailable, match="edited since"):
        editor.revert()
    assert read_files(fresh) == files


def test_a_detached_turn_someone_typed_into_while_it_wrote_is_refused() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    stream = build_stream([Block("edit", "app.py", "    return 2\n", "    return 20\n    # more\n")])[0]
    editor.feed(stream[: stream.index("# more")])
    with doc.transaction(origin="human"):
        workspace_files(doc)["app.py"].insert(0, "# typed meanwhile\n")
    editor.feed(stream[stream.index("# more"):])
    editor.finish()
    fresh = _compacted(doc, editor)
    with pytest.raises(RevertUnavailable, match="while it was being written"):
        editor.revert()
    assert read(fresh, "app.py").startswith("# typed meanwhile\n")


def test_a_running_turn_cannot_be_detached() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed("Thinking")
    with pytest.raises(EditorClosedError):
        editor.detach(Doc())


# -- undoing a revert (``TurnEditor.restore``, issue 27) -------------------------------------


def _reverted(files: dict[str, str], blocks: list[Block]) -> tuple[Doc[Any], TurnEditor, dict[str, str]]:
    """A turn of ``blocks`` over ``files``, then reverted: the document, the editor and the
    files as the turn left them."""
    doc = make_doc(files)
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(blocks)[0])
    editor.finish()
    written = read_files(doc)
    editor.revert()
    return doc, editor, written


def test_restore_puts_the_turn_back_with_its_blocks_and_the_file_it_created() -> None:
    doc, editor, written = _reverted({"app.py": APP}, BLOCKS)
    assert read_files(doc) == {"app.py": APP}
    events = editor.restore()
    assert read_files(doc) == written  # lib/new.py is back too
    assert [(e.block, e.state, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (0, EditState.APPLIED, None),
        (1, EditState.APPLIED, None),
    ]
    assert [entry.outcome for entry in editor.ledger.entries] == [Outcome.APPLIED, Outcome.APPLIED, Outcome.FAILED]
    assert not editor.reverted
    # ... and it reverts again (as text now), and comes back again.
    editor.revert()
    assert read_files(doc) == {"app.py": APP}
    editor.restore()
    assert read_files(doc) == written


def test_restore_keeps_what_people_typed_since_the_revert() -> None:
    doc, editor, written = _reverted({"app.py": APP}, BLOCKS)
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin="human"):
        ytext.insert(len(ytext), "\n# typed after the revert\n")
    editor.restore()
    assert read_files(doc) == {**written, "app.py": written["app.py"] + "\n# typed after the revert\n"}


def test_restore_is_refused_and_changes_nothing_when_its_lines_were_edited_since() -> None:
    doc, editor, _ = _reverted({"app.py": APP}, BLOCKS)
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin="human"):
        ytext.insert(len("def a("), "y")  # the line the turn changed
    files = read_files(doc)
    with pytest.raises(RevertUnavailable, match=r"cannot be restored: the lines its revert changed in app\.py"):
        editor.restore()
    assert read_files(doc) == files
    assert editor.reverted  # still reverted: nothing was restored


def test_restore_of_a_turn_that_is_not_reverted_is_refused() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream(BLOCKS)[0])
    editor.finish()
    with pytest.raises(RevertUnavailable, match="is not reverted"):
        editor.restore()


def test_a_turn_reverted_after_the_room_compacted_its_document_is_restored_too() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed(build_stream([Block("edit", "app.py", "def a():\n", "def a(x):\n")])[0])
    editor.finish()
    fresh = _compacted(doc, editor)
    editor.revert()
    assert read(fresh, "app.py") == APP
    editor.restore()
    assert read(fresh, "app.py") == APP.replace("def a():", "def a(x):")


@settings(max_examples=60, deadline=None)
@given(scenario=scenarios())
def test_revert_then_restore_gives_back_what_the_turn_wrote(scenario: Scenario) -> None:
    doc = make_doc(scenario.files)
    editor = TurnEditor(doc, "t1")
    editor.feed(scenario.stream)
    editor.finish()
    written = read_files(doc)
    editor.revert()
    if editor.ledger.with_outcome(Outcome.REVERTED):
        editor.restore()
    assert read_files(doc) == written
