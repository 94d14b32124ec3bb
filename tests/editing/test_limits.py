"""A model's writes respect the workspace's file limits, as HTTP writes do."""

from __future__ import annotations

from spark_ide.editing import (
    BlockStatus,
    EditEvent,
    EditState,
    FailureReason,
    FileLimits,
    Outcome,
    TurnEditor,
)
from spark_ide.editing.limits import too_many_files

from .support import Block, build_stream, make_doc, read, read_files

APP = "def a():\n    return 1\n"  # 22 bytes


def run(editor: TurnEditor, stream: str, size: int = 7) -> list[EditEvent]:
    events: list[EditEvent] = []
    for at in range(0, len(stream), size):
        events += editor.feed(stream[at : at + size])
    return events + editor.finish()


def finals(events: list[EditEvent]) -> list[tuple[int, EditState, str | None]]:
    return [
        (e.block, e.state, e.reason)
        for e in events
        if isinstance(e, BlockStatus) and e.state.is_final
    ]


def test_a_write_that_would_create_a_file_past_the_limit_fails_and_creates_nothing() -> None:
    doc = make_doc({"app.py": APP, "b.py": ""})
    editor = TurnEditor(doc, "t1", limits=FileLimits(max_files=2))
    blocks = [
        Block("write", "new.py", "", "x = 1\n"),
        Block("write", "b.py", "", "b = 1\n"),  # replacing a file adds none
        Block("edit", "app.py", "    return 1\n", "    return 2\n"),
    ]
    events = run(editor, build_stream(blocks)[0])
    assert finals(events) == [
        (0, EditState.FAILED, FailureReason.TOO_MANY_FILES.value),
        (1, EditState.APPLIED, None),
        (2, EditState.APPLIED, None),
    ]
    failed = [e for e in events if isinstance(e, BlockStatus) and e.block == 0]
    assert failed[-1].message == "the workspace already holds 2 files (at most 2)"
    assert read_files(doc) == {"app.py": APP.replace("1\n", "2\n"), "b.py": "b = 1\n"}
    assert "too_many_files" in editor.ledger.as_prompt()


def test_a_write_past_the_size_limit_fails_while_it_streams_and_leaves_no_file() -> None:
    doc = make_doc({})
    editor = TurnEditor(doc, "t1", limits=FileLimits(max_file_bytes=20))
    stream = '<write path="big.py">\n' + "".join(f"line_{n} = {n}\n" for n in range(10)) + "</write>\nAfter.\n"
    head = stream[: stream.index("line_3")]  # 3 lines of 11 bytes: over the limit already
    events = editor.feed(head)
    assert finals(events) == [(0, EditState.FAILED, FailureReason.FILE_TOO_LARGE.value)]
    assert read_files(doc) == {}
    events = editor.feed(stream[len(head) :]) + editor.finish()
    assert finals(events) == []  # the rest of the block is ignored
    assert editor.ledger.entry(0).outcome is Outcome.FAILED


def test_an_edit_that_grows_a_file_past_the_limit_is_rolled_back() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1", limits=FileLimits(max_file_bytes=30))
    block = Block("edit", "app.py", "    return 1\n", "    x = 1\n    return x\n")  # 32 bytes
    events = run(editor, build_stream([block])[0])
    assert finals(events) == [(0, EditState.FAILED, FailureReason.FILE_TOO_LARGE.value)]
    assert read(doc, "app.py") == APP


def test_a_rewrite_that_ends_within_the_limit_is_applied_though_it_grows_meanwhile() -> None:
    # The new lines go in before the old ones leave: 22 + 20 bytes at the peak, 20 at the end.
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1", limits=FileLimits(max_file_bytes=21))
    new = "def b():\n    pass\n" + "#\n"
    events = run(editor, build_stream([Block("write", "app.py", "", new)])[0], size=3)
    assert finals(events) == [(0, EditState.APPLIED, None)]
    assert read(doc, "app.py") == new


def test_the_size_limit_counts_utf8_bytes() -> None:
    limits = FileLimits(max_file_bytes=10)
    fits, too_big = "éééé\n", "ééééé\n"  # 9 and 11 bytes, 5 and 6 characters
    for text, state in ((fits, EditState.APPLIED), (too_big, EditState.FAILED)):
        doc = make_doc({})
        events = run(TurnEditor(doc, "t1", limits=limits), build_stream([Block("write", "u.txt", "", text)])[0])
        assert [s for _, s, _ in finals(events)] == [state]


def test_without_limits_nothing_is_refused() -> None:
    doc = make_doc({f"f{n}.py": "" for n in range(5)})
    editor = TurnEditor(doc, "t1")
    body = "x" * 5000 + "\n"
    events = run(editor, build_stream([Block("write", "new.py", "", body)])[0], size=500)
    assert finals(events) == [(0, EditState.APPLIED, None)]
    assert read(doc, "new.py") == body


def test_a_write_where_a_file_would_also_be_a_folder_fails_and_creates_nothing() -> None:
    doc = make_doc({"app.py": APP, "pkg/mod.py": "m = 1\n"})
    editor = TurnEditor(doc, "t1")
    blocks = [
        Block("write", "app.py/inner.py", "", "x = 1\n"),  # under a file
        Block("write", "pkg", "", "p = 1\n"),  # over a folder
        Block("write", "pkg/other.py", "", "o = 1\n"),  # beside a file in a folder: fine
    ]
    events = run(editor, build_stream(blocks)[0])
    assert finals(events) == [
        (0, EditState.FAILED, FailureReason.PATH_CONFLICT),
        (1, EditState.FAILED, FailureReason.PATH_CONFLICT),
        (2, EditState.APPLIED, None),
    ]
    assert read_files(doc) == {"app.py": APP, "pkg/mod.py": "m = 1\n", "pkg/other.py": "o = 1\n"}


def test_one_file_count_rule_for_every_writer() -> None:
    """``too_many_files``: the rule the model's blocks, a person's new files in the live
    document (``live.doc_rules``) and HTTP writes and imports (``workspaces.services``) obey."""
    assert too_many_files(None, 10_000, 10_000) is None
    assert too_many_files(3, 2) is None and too_many_files(3, 0, 3) is None
    assert too_many_files(2, 2) == "the workspace already holds 2 files (at most 2)"
    assert too_many_files(2, 0, 3) == "a workspace holds at most 2 files, not 3"
    assert too_many_files(2, 5) is not None  # a limit lowered below what a workspace holds
