from __future__ import annotations

import pytest
from hypothesis import given, settings

from spark_ide.editing import (
    BlockStatus,
    EditorClosedError,
    EditState,
    Outcome,
    RollbackReason,
    TurnEditor,
    workspace_files,
)

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
