from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc, TextEvent

from spark_ide.editing import (
    BlockStatus,
    EditEvent,
    EditorClosedError,
    EditState,
    FailureReason,
    Outcome,
    ProseEvent,
    TurnEditor,
    workspace_files,
)
from spark_ide.editing.applier import GHOST_CHARS

from .support import Block, build_stream, make_doc, read

APP = "def a():\n    return 1\n\ndef b():\n    return 2\n"


def run(doc: Doc[Any], stream: str, size: int = 4, turn: str = "t1") -> list[EditEvent]:
    editor = TurnEditor(doc, turn)
    events: list[EditEvent] = []
    for at in range(0, len(stream), size):
        events += editor.feed(stream[at : at + size])
    return events + editor.finish()


def statuses(events: list[EditEvent], block: int | None = None) -> list[BlockStatus]:
    found = [e for e in events if isinstance(e, BlockStatus)]
    return [e for e in found if block is None or e.block == block]


def final(events: list[EditEvent], block: int) -> BlockStatus:
    return statuses(events, block)[-1]


def test_it_applies_an_edit_while_streaming_and_reports_each_state() -> None:
    doc = make_doc({"app.py": APP})
    stream, _ = build_stream([Block("edit", "app.py", "    return 2\n", "    return 20\n")])
    events = run(doc, stream)
    states = [s.state for s in statuses(events)]
    assert states[0] is EditState.LOCATING
    assert EditState.STREAMING in states
    assert states[-1] is EditState.APPLIED
    assert read(doc, "app.py") == APP.replace("return 2\n", "return 20\n")
    assert final(events, 0).lines == (5, 5)


def test_it_highlights_the_located_lines_before_changing_anything() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    events = editor.feed('<edit path="app.py">\n<old_text>\ndef b():\n')
    locating = [s for s in statuses(events) if s.state is EditState.LOCATING]
    assert locating[-1].lines == (4, 4)
    assert locating[-1].candidates == (4,)
    assert read(doc, "app.py") == APP


def test_it_reports_the_ghost_line_without_writing_it() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed('<edit path="app.py">\n<old_text>\n    return 2\n</old_text>\n<new_text>\n')
    events = editor.feed("    return 4")
    streaming = statuses(events)[-1]
    assert streaming.state is EditState.STREAMING
    assert streaming.ghost == "    return 4"
    assert streaming.ghost_line == 5
    assert streaming.detail() == {
        "kind": "edit",
        "lines": [5, 5],
        "ghost": "    return 4",
        "ghost_line": 5,
        "strategy": "exact",
    }
    assert read(doc, "app.py") == APP


def test_a_long_unfinished_line_reports_its_end_as_the_ghost() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed('<edit path="app.py">\n<old_text>\n    return 2\n</old_text>\n<new_text>\n')
    literal = "".join(f"{i:05d}," for i in range(20_000))  # 120,000 characters on one line
    line = f"    return [{literal}]"
    events: list[Any] = []
    for at in range(0, len(line), 4):
        events = editor.feed(line[at : at + 4])
    streaming = statuses(events)[-1]
    assert streaming.ghost == line[-GHOST_CHARS:]
    assert streaming.ghost_from == len(line) - GHOST_CHARS
    detail = streaming.detail()
    assert detail["ghost"] == line[-GHOST_CHARS:] and detail["ghost_from"] == len(line) - GHOST_CHARS
    assert read(doc, "app.py") == APP  # still unfinished: not written
    editor.feed("\n</new_text>\n</edit>\n")
    assert read(doc, "app.py") == APP.replace("    return 2\n", line + "\n")  # written whole


def test_it_passes_prose_through_for_the_transcript() -> None:
    doc = make_doc({"app.py": APP})
    stream, _ = build_stream([Block("edit", "app.py", "def a():\n", "def a(x):\n")], "Intro.\n")
    events = run(doc, stream, size=3)
    prose = "".join(e.text for e in events if isinstance(e, ProseEvent))
    assert prose == "Intro.\nDone.\n"


def test_it_writes_a_new_file_and_replaces_an_existing_one() -> None:
    doc = make_doc({"app.py": APP})
    blocks = [
        Block("write", "pkg/new.py", "", "x = 1\ny = 2\n"),
        Block("write", "app.py", "", "def a():\n    return 3\n"),
    ]
    events = run(doc, build_stream(blocks)[0])
    assert read(doc, "pkg/new.py") == "x = 1\ny = 2\n"
    assert read(doc, "app.py") == "def a():\n    return 3\n"
    assert [final(events, n).state for n in (0, 1)] == [EditState.APPLIED] * 2


def test_it_marks_every_change_with_the_turn_and_block_origin() -> None:
    doc = make_doc({"app.py": APP})
    origins: list[object] = []

    def record(event: TextEvent) -> None:
        origins.append(event.transaction.origin)

    ytext = workspace_files(doc)["app.py"]  # the observer lives as long as this object
    ytext.observe(record)
    blocks = [
        Block("edit", "app.py", "def a():\n", "def a(x):\n"),
        Block("edit", "app.py", "    return 2\n", "    return 3\n"),
    ]
    run(doc, build_stream(blocks)[0], turn="t42")
    assert origins
    assert set(origins) == {"ai:t42:0", "ai:t42:1"}


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (Block("edit", "missing.py", "x\n", "y\n"), FailureReason.FILE_NOT_FOUND),
        (Block("edit", "../etc/passwd", "x\n", "y\n"), FailureReason.BAD_PATH),
        (Block("write", "/abs.py", "", "y\n"), FailureReason.BAD_PATH),
        (Block("edit", "app.py", "nothing like it\n", "y\n"), FailureReason.NO_MATCH),
        (Block("edit", "app.py", "    return 1\n", "y\n"), FailureReason.AMBIGUOUS_MATCH),
        (Block("edit", "app.py", "", "y\n"), FailureReason.EMPTY_OLD_TEXT),
    ],
)
def test_it_fails_a_block_with_a_named_reason(block: Block, reason: FailureReason) -> None:
    doc = make_doc({"app.py": APP.replace("return 2", "return 1")})
    events = run(doc, build_stream([block])[0])
    failed = final(events, 0)
    assert failed.state is EditState.FAILED
    assert failed.reason == reason.value
    assert failed.message == reason.explanation
    assert read(doc, "app.py") == APP.replace("return 2", "return 1")


def test_it_lists_candidates_when_a_match_is_ambiguous() -> None:
    doc = make_doc({"app.py": APP.replace("return 2", "return 1")})
    events = run(doc, build_stream([Block("edit", "app.py", "    return 1\n", "y\n")])[0])
    assert final(events, 0).candidates == (2, 5)
    assert final(events, 0).detail() == {
        "kind": "edit",
        "candidates": [2, 5],
        "reason": "ambiguous_match",
        "message": FailureReason.AMBIGUOUS_MATCH.explanation,
    }


def test_it_uses_the_line_hint_to_pick_between_equal_matches() -> None:
    doc = make_doc({"app.py": APP.replace("return 2", "return 1")})
    block = Block("edit", "app.py", "    return 1\n", "    return 9\n", hint=5)
    run(doc, build_stream([block])[0])
    assert read(doc, "app.py") == APP.replace("return 2", "return 9")


def test_it_fails_a_missing_path_in_search_replace_and_goes_on() -> None:
    doc = make_doc({"app.py": APP})
    stream = (
        "Let me fix it\n<<<<<<< SEARCH\ndef a():\n=======\ndef a(x):\n>>>>>>> REPLACE\n"
        + build_stream([Block("edit", "app.py", "def b():\n", "def b(y):\n")])[0]
    )
    events = run(doc, stream)
    assert final(events, 0).reason == FailureReason.MISSING_PATH.value
    assert final(events, 1).state is EditState.APPLIED
    assert read(doc, "app.py") == APP.replace("def b():", "def b(y):")


def test_it_applies_search_replace_blocks() -> None:
    doc = make_doc({"app.py": APP})
    block = Block("edit", "app.py", "def a():\n", "def a(z):\n", spelling="search_replace")
    run(doc, build_stream([block])[0], size=1)
    assert read(doc, "app.py") == APP.replace("def a():", "def a(z):")


def test_it_undoes_a_partly_written_block_that_the_stream_leaves_unterminated() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed('<edit path="app.py">\n<old_text>\ndef a():\n</old_text>\n<new_text>\nx\ny\n')
    assert read(doc, "app.py") != APP
    events = editor.finish()
    assert final(events, 0).state is EditState.FAILED
    assert final(events, 0).reason == FailureReason.UNTERMINATED_BLOCK.value
    assert read(doc, "app.py") == APP
    assert editor.ledger.entry(0).outcome is Outcome.FAILED


def test_it_removes_a_file_created_by_an_unterminated_write() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed('<write path="new.py">\nline one\nline')
    assert "new.py" in workspace_files(doc)
    editor.finish()
    assert "new.py" not in workspace_files(doc)


def test_it_refuses_to_be_fed_after_the_turn_ended() -> None:
    editor = TurnEditor(make_doc({}), "t1")
    editor.finish()
    with pytest.raises(EditorClosedError):
        editor.feed("more")
    with pytest.raises(EditorClosedError):
        editor.cancel()


def test_it_applies_blocks_in_order_against_the_current_text() -> None:
    doc = make_doc({"app.py": APP})
    blocks = [
        Block("edit", "app.py", "def a():\n", "def renamed():\n"),
        Block("edit", "app.py", "def renamed():\n    return 1\n", "def renamed():\n    pass\n"),
    ]
    run(doc, build_stream(blocks)[0])
    assert read(doc, "app.py") == APP.replace("def a():\n    return 1", "def renamed():\n    pass")


def test_it_reports_at_most_one_progress_status_per_feed() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    editor.feed('<edit path="app.py">\n<old_text>\n    return 2\n</old_text>\n<new_text>\n')
    events = editor.feed("    a = 1\n    b = 2\n    return")
    assert len(statuses(events)) == 1
    assert statuses(events)[0].ghost == "    return"


def test_a_write_over_an_existing_file_keeps_its_unchanged_lines_in_place() -> None:
    doc = make_doc({"app.py": APP})
    changes: list[object] = []
    ytext = workspace_files(doc)["app.py"]
    ytext.observe(lambda event: changes.append(event.transaction.origin))
    new = APP.replace("    return 2\n", "    return 3\n")
    run(doc, build_stream([Block("write", "app.py", "", new)])[0])
    assert read(doc, "app.py") == new
    assert changes == ["ai:t1:0", "ai:t1:0"]  # one insertion, one deletion; the rest was kept
