"""A fence's final status records the code the model wrote in it (`detail.code`): the
transcript shows that, now and after a reload, never the document, which people may have
typed into since. Only the final status carries it: a status per delta stays small."""

from __future__ import annotations

import json
from collections.abc import Sequence

from spark_ide.editing import BlockStatus, EditState, TurnEditor, workspace_files
from spark_ide.editing.status import CODE_LINE_CHARS, CODE_MAX_LINES, CUT_MARK, code_head

from .support import make_doc, read

CODE = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"


def statuses(events: Sequence[object]) -> list[BlockStatus]:
    return [event for event in events if isinstance(event, BlockStatus)]


def test_code_head_keeps_short_code_as_it_is() -> None:
    for text in ("", "x", "x = 1\n", "a\nb", "a\n\n\nb\n", "x\n" * CODE_MAX_LINES):
        assert code_head(text) == (text, None)


def test_code_head_cuts_long_lines_and_counts_the_lines_it_leaves_out() -> None:
    line = "y" * (CODE_LINE_CHARS + 5)
    assert code_head(f"a\n{line}\nb\n") == (f"a\n{'y' * CODE_LINE_CHARS}{CUT_MARK}\nb\n", None)
    assert code_head(line) == ("y" * CODE_LINE_CHARS + CUT_MARK, None)
    many = "".join(f"v{i} = {i}\n" for i in range(CODE_MAX_LINES + 50))
    head, lines = code_head(many)
    assert head == "".join(f"v{i} = {i}\n" for i in range(CODE_MAX_LINES))
    assert lines == CODE_MAX_LINES + 50
    assert code_head(many + "tail") == (head, CODE_MAX_LINES + 51)  # an unfinished last line counts


def test_the_applied_status_carries_what_the_model_wrote_not_what_a_person_typed_meanwhile() -> None:
    doc = make_doc({"main.py": ""})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    events = editor.feed("Here:\n```python\ndef is_prime(n):\n")
    with doc.transaction(origin="guest"):  # a guest types at the top of the file meanwhile
        workspace_files(doc)["main.py"].insert(0, "# Grace was here\n")
    events += editor.feed("    return n > 1 and all(n % i for i in range(2, n))\n```\nDone.\n") + editor.finish()
    assert read(doc, "main.py") == "# Grace was here\n" + CODE
    final = statuses(events)[-1]
    assert final.state is EditState.APPLIED
    assert final.detail()["code"] == CODE
    assert "code_lines" not in final.detail()
    assert all("code" not in status.detail() for status in statuses(events)[:-1])


def test_a_rolled_back_fence_records_what_was_rolled_back_and_how_many_lines() -> None:
    doc = make_doc({"main.py": ""})
    editor = TurnEditor(doc, "t1", fence_path="main.py")
    editor.feed("```python\ndef is_prime(n):\n    return Tr")
    events = editor.cancel()
    assert read(doc, "main.py") == ""
    final = statuses(events)[-1]
    assert final.state is EditState.ROLLED_BACK
    assert final.detail()["code"] == "def is_prime(n):\n    return Tr"  # the unfinished line too
    assert final.detail()["written"] == [1, 1]  # what it had written when it stopped (the chip's count)


def test_a_failed_fence_records_its_code_and_a_tag_block_records_none() -> None:
    editor = TurnEditor(make_doc({"main.py": ""}), "t1", fence_path="main.py")
    events = editor.feed("```python\ndef half(") + editor.finish()
    assert statuses(events)[-1].state is EditState.FAILED
    assert statuses(events)[-1].detail()["code"] == "def half("
    tags = TurnEditor(make_doc({}), "t1", fence_path="main.py")
    events = tags.feed('<write path="a.py">\nx = 1\n</write>\n') + tags.finish()
    assert statuses(events)[-1].state is EditState.APPLIED
    assert "code" not in statuses(events)[-1].detail()


def test_a_long_one_line_fence_sends_small_statuses_and_one_bounded_record() -> None:
    """A megabyte on one line, streamed in 2,000 chunks: no streaming status grows with it,
    and the final one carries the line's start."""
    editor = TurnEditor(make_doc({"main.py": ""}), "t1", fence_path="main.py")
    events = editor.feed("```python\nDATA = [")
    piece = "1234, " * 80
    for _ in range(2000):
        events += editor.feed(piece)
    events += editor.feed("]\n```\n") + editor.finish()
    found = statuses(events)
    assert max(len(json.dumps(status.detail())) for status in found[:-1]) < 600
    final = found[-1].detail()
    assert final["code"] == ("DATA = [" + piece * 5)[:CODE_LINE_CHARS] + CUT_MARK + "\n"
    assert "code_lines" not in final


def test_any_block_stopped_mid_way_says_how_many_lines_it_had_written() -> None:
    """A reloaded page counts a rolled-back block's lines from its final status: the
    streaming statuses that showed the count may have been merged away in the stored log."""
    doc = make_doc({})
    editor = TurnEditor(doc, "t1")
    editor.feed('<write path="a.py">\nx = 1\ny = 2\nz = 3\nw')
    final = statuses(editor.cancel())[-1]
    assert final.state is EditState.ROLLED_BACK
    assert final.detail()["written"] == [1, 3]
    assert "code" not in final.detail()
