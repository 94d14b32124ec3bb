"""apply_patch calls on a turn: V4A hunks located and streamed in place, file operations,
refusals, failures and what the model is told, cancel and revert."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pycrdt import Doc

from spark_ide.editing import (
    BlockStatus,
    EditEvent,
    EditState,
    FailureReason,
    FileLimits,
    MatchStrategy,
    PatchCall,
    PatchOperation,
    TurnEditor,
    workspace_files,
)
from spark_ide.editing.limits import NO_LIMITS

from .support import make_doc, read, read_files

APP = "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n"


def patch(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(line + "\n" for line in body) + "*** End Patch\n"


def run(
    doc: Doc[Any], text: str, *, size: int = 5, limits: FileLimits = NO_LIMITS, editor: TurnEditor | None = None,
    operation: PatchOperation | None = None, call_id: str = "call_1",
) -> tuple[PatchCall, list[EditEvent]]:
    editor = editor or TurnEditor(doc, "t1", limits=limits)
    call = editor.open_patch(call_id, operation)
    events: list[EditEvent] = []
    for at in range(0, len(text), size):
        events += call.feed(text[at : at + size])
    return call, events + call.finish()


def finals(call: PatchCall) -> list[tuple[EditState, str | None]]:
    return [(block.state, block.reason) for block in call.result.blocks]


def test_a_hunk_changes_the_document_while_it_streams_and_says_which_file_and_hunk() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    text = patch("*** Update File: app.py", "@@ class B:", "     def f(self):", "-        return 1", "+        x = 2",
                 "+        return x")
    events = call.feed(text[: text.index("+        return x") + 12])
    assert "        return 1\n" not in read(doc, "app.py").split("class B:")[1]  # the - line went already
    assert "        x = 2\n" in read(doc, "app.py")  # the first + line is in
    streaming = [e for e in events if isinstance(e, BlockStatus) and e.state is EditState.STREAMING][-1]
    assert (streaming.path, streaming.hunk, streaming.call, streaming.operation) == ("app.py", 1, "call_1", "update")
    assert streaming.ghost == "        ret"  # the unfinished line: shown, not written
    assert streaming.detail()["hunk"] == 1
    call.feed(text[text.index("+        return x") + 12 :])
    call.finish()
    assert read(doc, "app.py") == APP.replace("        return 1\n", "        x = 2\n        return x\n").replace(
        "        x = 2\n        return x\n", "        return 1\n", 1
    )
    assert call.result.status == "completed"
    assert call.result.output == "Success. Updated the following files:\nM app.py"


@pytest.mark.parametrize(
    ("line", "strategy"),
    [
        ("    total = 1\n", MatchStrategy.EXACT),
        ("    total = 1   \n", MatchStrategy.TRAILING_SPACE),
        ("\ttotal = 1\n", MatchStrategy.TRIMMED),
        ("    total\u00a0= \u201c1\u201d \u2013 0\n", MatchStrategy.UNICODE),
    ],
)
def test_old_lines_match_exactly_then_more_and_more_loosely(line: str, strategy: MatchStrategy) -> None:
    doc = make_doc({"m.py": f"def g():\n{line}    return total\n"})
    old = "    total = 1" if strategy is not MatchStrategy.UNICODE else '    total = "1" - 0'
    _, events = run(doc, patch("*** Update File: m.py", "@@", f" {old}", "-    return total", "+    return 2"))
    applied = [e for e in events if isinstance(e, BlockStatus) and e.state is EditState.APPLIED]
    assert applied[0].strategy is strategy
    assert read(doc, "m.py") == f"def g():\n{line}    return 2\n"  # context lines stay as the file has them


def test_anchors_stack_and_end_of_file_matches_at_the_end_first() -> None:
    doc = make_doc({"app.py": APP})
    run(doc, patch("*** Update File: app.py", "@@ class B:", "@@     def f(self):", "-        return 1",
                   "+        return 2"))
    assert read(doc, "app.py").endswith("class B:\n    def f(self):\n        return 2\n")
    assert read(doc, "app.py").startswith("class A:\n    def f(self):\n        return 1\n")
    doc = make_doc({"app.py": APP})
    run(doc, patch("*** Update File: app.py", "@@", "-        return 1", "+        return 3", "*** End of File"))
    assert read(doc, "app.py") == APP[: APP.rindex("return 1")] + "return 3\n"


def test_a_hunk_of_only_added_lines_goes_after_its_anchor_or_at_the_end() -> None:
    doc = make_doc({"app.py": APP})
    run(doc, patch("*** Update File: app.py", "@@ class A:", "+    '''A.'''", "@@", "+# end"))
    assert read(doc, "app.py") == APP.replace("class A:\n", "class A:\n    '''A.'''\n") + "# end\n"


def test_a_hunk_streamed_where_its_first_lines_matched_moves_when_the_rest_does_not() -> None:
    doc = make_doc({"t.txt": "x\ny\nx\nz\n"})
    call, events = run(doc, patch("*** Update File: t.txt", "@@", " x", "+new", " z"), size=3)
    states = [e.state for e in events if isinstance(e, BlockStatus)]
    assert states.index(EditState.STREAMING) < len(states) - 1 - states[::-1].index(EditState.LOCATING)
    assert read(doc, "t.txt") == "x\ny\nx\nnew\nz\n"
    assert call.result.blocks[0].lines == (3, 5)


def test_an_end_of_file_hunk_streamed_early_moves_to_the_end() -> None:
    doc = make_doc({"t.txt": "a\nb\na\nb\n"})
    editor = TurnEditor(doc, "t1")
    call, _ = run(doc, patch("*** Update File: t.txt", "@@", " a", "+x", " b", "*** End of File"), editor=editor)
    assert read(doc, "t.txt") == "a\nb\na\nx\nb\n"
    assert call.result.blocks[0].lines == (3, 5)
    code = editor.take_code()  # the watchdog saw the line where it went, then where it stayed
    assert [(piece.first_line, piece.text) for piece in code if piece.text.strip()] == [(1, "x"), (3, "x")]


def test_a_hunk_that_cannot_be_located_fails_precisely_and_later_hunks_still_apply() -> None:
    doc = make_doc({"app.py": APP})
    call, _ = run(doc, patch(
        "*** Update File: app.py",
        "@@ class C:", "-x", "+y",
        "@@", "     def f(self):", "-        return 7", "+        return 8",
        "@@", " nothing here", "-at all", "+z",
        "@@ class B:", "     def f(self):", "-        return 1", "+        return 9",
    ))
    assert finals(call) == [
        (EditState.FAILED, "no_match"), (EditState.FAILED, "no_match"), (EditState.FAILED, "no_match"),
        (EditState.APPLIED, None),
    ]
    messages = [block.message for block in call.result.blocks]
    assert messages[0] == "hunk 1: its @@ line 'class C:' is not in app.py from line 1 on"
    assert messages[1] == (
        "hunk 2: its old lines 1-1 match at line 2, but old line 2 '        return 7' does not follow them "
        "(the file has '        return 1' there); searched in app.py from line 1 on"
    )
    assert messages[2] == "hunk 3: its first old line 'nothing here' is not in app.py from line 1 on"
    assert read(doc, "app.py").endswith("class B:\n    def f(self):\n        return 9\n")
    result = call.result
    assert result.status == "failed"
    as_json = json.loads(json.dumps(result.as_dict()))
    assert as_json["status"] == "failed" and as_json["call_id"] == "call_1"
    assert [block["reason"] for block in as_json["operations"][0]["blocks"]] == ["no_match"] * 3 + [None]
    assert result.output.splitlines()[0] == "Partly applied: 1 of 4 changes applied and stay; the rest failed."
    assert "hunk 4 applied at lines 6-7" in result.output
    assert "; hunk 3 failed (no_match): its first old line 'nothing here' is not in app.py from line 1 on;" in (
        result.output
    )


def test_file_operations_change_the_tree_as_they_come() -> None:
    doc = make_doc({"app.py": APP, "old.py": "x\n", "keep.py": "k\n"})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    text = patch("*** Add File: pkg/new.py", "+one", "+two", "*** Delete File: old.py")
    call.feed(text[: text.index("+tw")])
    assert read(doc, "pkg/new.py") == "one\n"  # the new file is in the tree while it streams
    call.feed(text[text.index("+tw") :])
    call.finish()
    call2, _ = run(doc, patch("*** Update File: app.py", "*** Move to: src/app.py", "@@ class A:", "+    pass",
                              "*** Add File: keep.py", "+replaced"), editor=editor, call_id="call_2")
    files = read_files(doc)
    assert set(files) == {"pkg/new.py", "src/app.py", "keep.py"}
    assert files["src/app.py"] == APP.replace("class A:\n", "class A:\n    pass\n")
    assert files["keep.py"] == "replaced\n"  # Add File over a file rewrites it
    assert call2.result.output == "Success. Updated the following files:\nM src/app.py\nA keep.py"
    editor.finish()
    editor.revert()  # both calls, every kind of operation
    assert read_files(doc) == {"app.py": APP, "old.py": "x\n", "keep.py": "k\n"}


@pytest.mark.parametrize(
    ("body", "limits", "reason"),
    [
        (["*** Add File: ../escape.py", "+x"], NO_LIMITS, FailureReason.BAD_PATH),
        (["*** Add File:", "+x"], NO_LIMITS, FailureReason.MISSING_PATH),
        (["*** Add File: /abs.py", "+x"], NO_LIMITS, FailureReason.BAD_PATH),
        (["*** Add File: n.py", "+x"], FileLimits(max_files=1), FailureReason.TOO_MANY_FILES),
        (["*** Update File: gone.py", "@@", "-x"], NO_LIMITS, FailureReason.FILE_NOT_FOUND),
        (["*** Delete File: gone.py"], NO_LIMITS, FailureReason.FILE_NOT_FOUND),
        (["*** Add File: app.py/x", "+x"], NO_LIMITS, FailureReason.PATH_CONFLICT),
        (["*** Update File: app.py", "@@ class A:", "+    a = 1", "@@ class B:", "+    b = 2"],
         FileLimits(max_file_bytes=len(APP) + 12), FailureReason.FILE_TOO_LARGE),
    ],
)
def test_an_operation_the_workspace_refuses_leaves_nothing_of_itself(
    body: list[str], limits: FileLimits, reason: FailureReason
) -> None:
    doc = make_doc({"app.py": APP})
    call, _ = run(doc, patch(*body, "*** Add File: ok.py", "+fine"), limits=limits)
    files = read_files(doc)
    assert files.pop("ok.py", None) == ("fine\n" if reason is not FailureReason.TOO_MANY_FILES else None)
    assert files == {"app.py": APP}
    first = call.result.operations[0]
    assert not first.applied and all(block.state is EditState.FAILED for block in first.blocks)
    assert first.blocks[-1].reason == reason
    assert call.result.status == "failed"


def test_a_move_onto_a_taken_path_is_refused_with_its_hunks() -> None:
    doc = make_doc({"app.py": APP, "b.py": "b\n"})
    call, _ = run(doc, patch("*** Update File: app.py", "*** Move to: b.py", "@@ class A:", "+    pass"))
    assert read_files(doc) == {"app.py": APP, "b.py": "b\n"}
    assert call.result.operations[0].blocks[0].message == "cannot move app.py: b.py already exists"
    assert len(call.result.blocks) == 1  # the hunks of a refused operation are not tried


def test_crlf_files_and_files_without_a_final_newline() -> None:
    doc = make_doc({"w.txt": "a\r\nb\r\nc\r\n", "n.txt": "a\nb"})
    run(doc, patch("*** Update File: w.txt", "@@", " a", "-b", "+B", "+B2", "*** Update File: n.txt", "@@", " b", "+c"))
    assert read(doc, "w.txt") == "a\r\nB\r\nB2\r\nc\r\n"
    assert read(doc, "n.txt") == "a\nb\nc\n"


def test_cancel_mid_hunk_keeps_completed_hunks_and_answers_the_call() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    text = patch("*** Update File: app.py", "@@ class A:", "     def f(self):", "-        return 1",
                 "+        return 2", "@@ class B:", "     def f(self):", "-        return 1", "+        return 3",
                 "+        # more")
    call.feed(text[: text.index("# mo")])
    assert "return 3" in read(doc, "app.py")
    events = editor.cancel()
    assert [(e.block, e.state, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (1, EditState.ROLLED_BACK, "cancelled")
    ]
    assert read(doc, "app.py") == APP.replace("return 1", "return 2", 1)
    result = call.result
    assert result.interrupted and result.status == "failed"
    assert result.output.startswith("Failed: interrupted by the user; 1 of the patch's changes applied")
    with pytest.raises(RuntimeError):
        call.feed("more")


def test_the_builtin_tool_form_one_operation_per_call() -> None:
    doc = make_doc({"app.py": APP, "old.py": "x\n"})
    editor = TurnEditor(doc, "t1")
    run(doc, "+hello\n+world\n", operation=PatchOperation("create_file", "new.py"), editor=editor, call_id="c1")
    run(doc, "@@ class B:\n     def f(self):\n-        return 1\n+        return 5\n",
        operation=PatchOperation("update_file", "app.py"), editor=editor, call_id="c2")
    deleted, _ = run(doc, "", operation=PatchOperation("delete_file", "old.py"), editor=editor, call_id="c3")
    unknown, _ = run(doc, "+x\n", operation=PatchOperation("rename_file", "x.py"), editor=editor, call_id="c4")
    assert read_files(doc) == {"app.py": APP[: APP.rindex("return 1")] + "return 5\n", "new.py": "hello\nworld\n"}
    assert deleted.result.output == "Success. Updated the following files:\nD old.py"
    assert unknown.result.status == "failed"
    assert "unknown operation type 'rename_file'" in unknown.result.output


def test_a_broken_patch_fails_what_it_breaks_and_an_empty_one_fails() -> None:
    doc = make_doc({"app.py": APP})
    call, _ = run(doc, patch("*** Update File: app.py", "@@ class A:", "+    a = 1", "oops", "+b"))
    assert finals(call) == [(EditState.FAILED, "malformed_block")]
    assert read(doc, "app.py") == APP
    bare, _ = run(doc, patch("*** Update File: app.py", "@@ class A:", "*** Update File: app.py", "@@", "-x"))
    assert [block.message for block in bare.result.blocks] == [
        "hunk 1 of app.py has no lines", "hunk 1: its first old line 'x' is not in app.py from line 1 on"
    ]
    empty, _ = run(doc, "")
    assert empty.result.status == "failed"
    assert "the patch has no operation" in empty.result.output


def test_the_turns_end_answers_a_call_still_open() -> None:
    doc = make_doc({"app.py": APP})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    call.feed(patch("*** Update File: app.py", "@@ class A:", "+    a = 1")[:-20])
    events = editor.finish()
    assert call.result.interrupted and call.result.status == "failed"
    assert [(e.state, e.reason) for e in events if isinstance(e, BlockStatus)] == [
        (EditState.ROLLED_BACK, "cancelled")
    ]
    assert read(doc, "app.py") == APP


def test_an_explain_only_turn_applies_no_patch_and_a_detached_turn_reverts_its_patches_as_text() -> None:
    doc = make_doc({"app.py": APP, "old.py": "x\n"})
    quiet, _ = run(doc, patch("*** Delete File: old.py"), editor=TurnEditor(doc, "t0", explain_only=True))
    assert quiet.result.status == "failed" and "editing is off" in quiet.result.output
    editor = TurnEditor(doc, "t1")
    run(doc, patch("*** Delete File: old.py", "*** Update File: app.py", "*** Move to: main.py", "@@ class B:",
                   "+    pass", "*** Add File: n.py", "+n"), editor=editor)
    editor.finish()
    assert set(read_files(doc)) == {"main.py", "n.py"}
    fresh = make_doc(read_files(doc))  # the room compacted its document: no undo history
    editor.detach(fresh)
    editor.revert()
    assert read_files(fresh) == {"app.py": APP, "old.py": "x\n"}


def test_a_person_editing_a_line_the_hunk_still_needs_keeps_the_edit_and_the_hunk_fails_clean() -> None:
    doc = make_doc({"t.txt": "a\nb\ncat\n"})
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    text = patch("*** Update File: t.txt", "@@", " a", "-b", "+B", " cat")
    call.feed(text[: text.index(" cat\n")])
    assert read(doc, "t.txt") == "a\nB\ncat\n"  # located on its first lines, streaming
    ytext = workspace_files(doc)["t.txt"]
    with doc.transaction(origin="person"):
        ytext.insert(len("a\nB\nc"), "X")  # the person edits "cat" before the hunk's " cat" comes
    call.feed(text[text.index(" cat\n") :])
    call.finish()
    assert read(doc, "t.txt") == "a\nb\ncXat\n"  # rolled back, then not found with all its lines
    assert finals(call) == [(EditState.FAILED, "no_match")]
