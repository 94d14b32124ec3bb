from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from spark_ide.editing import (
    BlockStatus,
    EditState,
    Outcome,
    RollbackReason,
    TurnEditor,
    workspace_files,
)

from .scenarios import Scenario, scenarios
from .support import Block, build_stream, chunk, make_doc, read, read_files, sync

APP = "def a():\n    return 1\n\ndef b():\n    return 2\n"
TWO_BLOCKS = build_stream(
    [
        Block("edit", "app.py", "def a():\n", "def a(x):\n"),
        Block("edit", "app.py", "def b():\n    return 2\n", "def b():\n    y = 1\n    return y\n"),
    ]
)[0]


def feed_until(editor: TurnEditor, stream: str, marker: str) -> None:
    editor.feed(stream[: stream.index(marker) + len(marker)])


def test_it_rolls_back_only_the_block_in_flight() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    feed_until(editor, TWO_BLOCKS, "    y = 1\n    ret")
    assert "y = 1" in read(doc, "app.py")
    events = editor.cancel()
    assert read(doc, "app.py") == APP.replace("def a():", "def a(x):")
    assert len(events) == 1
    rolled_back = events[0]
    assert isinstance(rolled_back, BlockStatus)
    assert (rolled_back.block, rolled_back.state) == (1, EditState.ROLLED_BACK)
    assert rolled_back.reason == RollbackReason.CANCELLED
    assert rolled_back.lines == (4, 5)
    assert [e.outcome for e in editor.ledger.entries] == [Outcome.APPLIED, Outcome.ROLLED_BACK]


def test_it_rolls_back_a_block_that_was_still_locating() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    feed_until(editor, TWO_BLOCKS, "<old_text>\ndef b")
    events = editor.cancel()
    assert [(e.block, e.state) for e in events if isinstance(e, BlockStatus)] == [
        (1, EditState.ROLLED_BACK)
    ]
    assert read(doc, "app.py") == APP.replace("def a():", "def a(x):")


def test_it_has_nothing_to_roll_back_between_blocks() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    feed_until(editor, TWO_BLOCKS, "</edit>\n")
    assert editor.cancel() == []
    assert read(doc, "app.py") == APP.replace("def a():", "def a(x):")


def test_it_keeps_what_a_person_typed_during_the_cancelled_block() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    feed_until(editor, TWO_BLOCKS, "    y = 1\n")
    ytext = workspace_files(doc)["app.py"]
    with doc.transaction(origin="human"):
        text = str(ytext)
        ytext.insert(len(text[: text.index("y = 1")].encode()), "«typed»")
        ytext.insert(0, "# top\n")
    editor.cancel()
    final = read(doc, "app.py")
    assert "«typed»" in final
    assert final.replace("«typed»", "") == "# top\n" + APP.replace("def a():", "def a(x):")


cut_fractions = st.floats(min_value=0.0, max_value=1.0)
cuts = st.lists(st.integers(min_value=0, max_value=5000), max_size=20)


@pytest.mark.timeout(300)
@settings(max_examples=200, deadline=None)
@given(scenario=scenarios(), fraction=cut_fractions, cut_points=cuts)
def test_cancel_at_any_byte_leaves_exactly_the_completed_blocks(
    scenario: Scenario, fraction: float, cut_points: list[int]
) -> None:
    cut = round(fraction * len(scenario.stream))
    doc = make_doc(scenario.files)
    editor = TurnEditor(doc, "t1")
    for piece in chunk(scenario.stream[:cut], cut_points):
        editor.feed(piece)
    editor.cancel()
    assert read_files(doc) == scenario.after(cut)
    assert not editor.ledger.with_outcome(Outcome.IN_FLIGHT)


def human_peer(doc: Doc[Any]) -> Doc[Any]:
    peer: Doc[Any] = Doc(client_id=2)
    peer.apply_update(doc.get_update())
    return peer


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None)
@given(
    scenario=scenarios(writes_to_main=False, newline_at_end=True),
    fraction=cut_fractions,
    cut_points=cuts,
    typing_at=st.lists(st.integers(min_value=0, max_value=5000), max_size=8),
    note_positions=st.lists(st.integers(min_value=0, max_value=500), max_size=8),
)
def test_cancel_keeps_concurrent_human_edits_on_another_peer(
    scenario: Scenario,
    fraction: float,
    cut_points: list[int],
    typing_at: list[int],
    note_positions: list[int],
) -> None:
    cut = round(fraction * len(scenario.stream))
    files = {**scenario.files, "notes.md": "notes\n"}
    server = make_doc(files, client_id=1)
    person = human_peer(server)
    pieces = chunk(scenario.stream[:cut], cut_points)
    typed: list[str] = []
    editor = TurnEditor(server, "t1")
    for number, piece in enumerate(pieces):
        if number in {at % (len(pieces) + 1) for at in typing_at}:
            marker = f"«h{number}»"
            typed.append(marker)
            texts = workspace_files(person)
            with person.transaction(origin="human"):
                texts["a.py"].insert(len(texts["a.py"]), marker + "\n")
                rows = str(texts["notes.md"]).splitlines(keepends=True)
                row = note_positions[number % len(note_positions)] if note_positions else 0
                before = "".join(rows[: row % (len(rows) + 1)])
                texts["notes.md"].insert(len(before.encode()), marker + "\n")
            sync(server, person)
        editor.feed(piece)
    editor.cancel()
    sync(server, person)
    assert read_files(server) == read_files(person)
    expected = scenario.after(cut)
    appended = "".join(marker + "\n" for marker in typed)
    assert read(server, "a.py") == expected["a.py"] + appended
    notes = read(server, "notes.md")
    assert all(notes.count(marker) == 1 for marker in typed)
