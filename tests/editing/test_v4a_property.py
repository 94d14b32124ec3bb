"""A V4A patch streamed in any chunks ends as the whole patch applied at once would
(benchmarks.v4a.apply_reference), with a person typing in the same file meanwhile; revert
takes it all back and leaves the person's lines.

The files repeat a few lines, some equal only loosely (trailing blanks, indentation, Unicode
quotes and dashes), so hunks often match early on their first lines and must be moved (rolled
back and located again with all their lines), match at a looser level, or fail."""

from __future__ import annotations

import difflib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from benchmarks.v4a import apply_reference
from spark_ide.editing import TurnEditor, workspace_files

from .support import chunk, make_doc, read

PATH = "f.txt"
# Few distinct lines, so hunks match in several places, and lines that only match loosely.
LINES = ["a", "b", "c", "", "  a", "a  ", "x = \u201cq\u201d", 'x = "q"', "d\u2013e", "d-e"]


@st.composite
def files_and_patches(draw: st.DrawFn) -> tuple[str, str]:
    old = draw(st.lists(st.sampled_from(LINES), max_size=24))
    new = list(old)
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(new)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        line = draw(st.sampled_from(LINES))
        if action == "insert" or at == len(new):
            new.insert(at, line)
        elif action == "delete":
            del new[at]
        else:
            new[at] = line
    ended = draw(st.booleans())
    crlf = bool(old) and draw(st.booleans())
    eol = "\r\n" if crlf else "\n"
    text = eol.join(old) + (eol if old and ended else "")
    patch = ["*** Begin Patch", f"*** Update File: {PATH}"]
    context = draw(st.integers(0, 3))
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context):
        first = group[0][1]
        anchored = first > 0 and draw(st.booleans())
        patch.append(f"@@ {old[first - 1]}" if anchored else "@@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                patch += [f" {line}" for line in old[a1:a2]]
            else:
                patch += [f"-{line}" for line in old[a1:a2]] + [f"+{line}" for line in new[b1:b2]]
        if group[-1][2] == len(old) and draw(st.booleans()):
            patch.append("*** End of File")
    patch.append("*** End Patch")
    patch_eol = "\r\n" if draw(st.booleans()) else "\n"
    return text, patch_eol.join(patch) + patch_eol


def stream(doc: Doc[Any], patch: str, cuts: list[int], typing: set[int], typed: str) -> tuple[TurnEditor, int]:
    """Feed ``patch`` in pieces; before the pieces numbered in ``typing`` a person types
    ``typed`` at the top of the file (when it is not empty). Returns the editor and how many
    times the person typed."""
    editor = TurnEditor(doc, "t1")
    call = editor.open_patch("call_1")
    ytext = workspace_files(doc)[PATH]
    times = 0
    for number, piece in enumerate(chunk(patch, cuts)):
        if number in typing and len(ytext):
            with doc.transaction(origin="person"):
                ytext.insert(0, typed)
            times += 1
        call.feed(piece)
    call.finish()
    editor.finish()
    return editor, times


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=files_and_patches(),
    cuts=st.lists(st.integers(0, 10_000), max_size=40),
    typing=st.sets(st.integers(0, 40), max_size=4),
)
def test_streamed_in_any_chunks_it_ends_as_the_whole_patch_applied_at_once(
    case: tuple[str, str], cuts: list[int], typing: set[int]
) -> None:
    text, patch = case
    expected = apply_reference({PATH: text}, patch)[PATH]
    typed = "#typed#" + ("\r\n" if "\r\n" in text else "\n")
    doc = make_doc({PATH: text})
    editor, times = stream(doc, patch, cuts, typing, typed)
    assert read(doc, PATH) == typed * times + expected
    editor.revert()
    # The person's lines all stay; where a line typed at the very spot of a deleted one goes
    # when the deletion is undone is the CRDT's choice (before or after it).
    reverted = read(doc, PATH)
    assert reverted.count(typed) == times
    assert reverted.replace(typed, "") == text
