from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing.v4a import (
    AddedText,
    AnchorLine,
    HunkClosed,
    HunkOpened,
    MovedTo,
    OldLine,
    OperationClosed,
    OperationOpened,
    PatchBroken,
    PatchEvent,
    PatchOpKind,
    V4AParser,
)

from .support import chunk

PATCH = """*** Begin Patch
*** Add File: src/new.py
+print("hi")
+
*** Update File: src/app.py
*** Move to: src/main.py
@@ class App:
@@     def run(self):
     x = 1
-    y = 2
+    y = 3
*** End of File
*** Delete File: old.py
*** End Patch
"""


def parse(text: str, cuts: list[int] | None = None) -> list[PatchEvent]:
    parser = V4AParser()
    events: list[PatchEvent] = []
    for piece in chunk(text, cuts or []):
        events += parser.feed(piece)
    return joined(events + parser.finish())


def joined(events: list[PatchEvent]) -> list[PatchEvent]:
    """Adjacent pieces of one + line joined (what a chunking may split)."""
    out: list[PatchEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, AddedText) and isinstance(last, AddedText) and "\n" not in (event.text, last.text):
            out[-1] = AddedText(last.text + event.text)
        else:
            out.append(event)
    return out


def kinds(events: list[PatchEvent]) -> list[object]:
    """The events without their patch line numbers."""
    out: list[object] = []
    for event in events:
        if isinstance(event, OperationOpened):
            out.append(("op", event.kind, event.path))
        elif isinstance(event, OldLine):
            out.append(("-" if event.removed else " ", event.text))
        elif isinstance(event, AnchorLine):
            out.append(("@@", event.text))
        elif isinstance(event, MovedTo):
            out.append(("move", event.path))
        elif isinstance(event, PatchBroken):
            out.append(("broken", event.message))
        else:
            out.append(event)
    return out


EXPECTED = [
    ("op", PatchOpKind.ADD, "src/new.py"),
    AddedText('print("hi")'), AddedText("\n"), AddedText("\n"),
    OperationClosed(),
    ("op", PatchOpKind.UPDATE, "src/app.py"),
    ("move", "src/main.py"),
    HunkOpened(7),
    ("@@", "class App:"), ("@@", "    def run(self):"),
    (" ", "    x = 1"), ("-", "    y = 2"),
    AddedText("    y = 3"), AddedText("\n"),
    HunkClosed(end_of_file=True),
    OperationClosed(),
    ("op", PatchOpKind.DELETE, "old.py"),
    OperationClosed(),
]


def test_it_reads_every_part_of_the_format() -> None:
    assert kinds(parse(PATCH)) == EXPECTED


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(0, 10_000), max_size=30), crlf=st.booleans(), padded=st.booleans())
def test_any_chunking_crlf_and_blanks_around_markers_read_the_same(cuts: list[int], crlf: bool, padded: bool) -> None:
    text = PATCH
    if padded:  # blanks around every marker line
        text = "\n".join(f"  {line} " if line.startswith("***") else line for line in text.split("\n"))
    if crlf:
        text = text.replace("\n", "\r\n")
    assert kinds(parse(text, cuts)) == EXPECTED


def test_a_marker_split_mid_word_is_read_whole() -> None:
    parser = V4AParser()
    events = parser.feed("*** Begin Patch\n*** Upd")
    assert events == []  # nothing of the unfinished line yet
    events = parser.feed("ate File: a.py\n@@\n-x\n")
    assert kinds(events)[:1] == [("op", PatchOpKind.UPDATE, "a.py")]


def test_a_plus_line_is_passed_on_as_it_grows_and_a_crlf_split_is_one_line_end() -> None:
    parser = V4AParser()
    parser.feed("*** Begin Patch\n*** Update File: a.py\n@@\n x\n")
    assert parser.feed("+ab") == [AddedText("ab")]  # on its first characters, before its line end
    parser2 = V4AParser(headless=(PatchOpKind.UPDATE, "a.py"))
    parser2.feed("+ab")
    assert parser2.feed("c\r") == [AddedText("c")]  # the "\r" is held: it may end the line
    assert parser2.feed("\nd") == [AddedText("\n")]


def test_blank_lines_are_context_inside_a_hunk_and_dropped_before_a_marker() -> None:
    events = kinds(parse("*** Begin Patch\n*** Update File: a\n@@\n a\n\n b\n\n\n*** End Patch\n"))
    assert [e for e in events if isinstance(e, tuple) and e[0] == " "] == [(" ", "a"), (" ", ""), (" ", "b")]


def test_the_first_hunk_may_omit_its_marker_and_a_unified_range_is_no_anchor() -> None:
    events = kinds(parse("*** Begin Patch\n*** Update File: a\n x\n@@ -3,4 +3,5 @@ def f():\n-y\n*** End Patch"))
    assert ("@@", "def f():") in events
    assert events.count(HunkClosed(end_of_file=False)) == 2


def test_the_builtin_form_has_no_envelope() -> None:
    update = V4AParser(headless=(PatchOpKind.UPDATE, "a.py"))
    events = kinds(joined(update.feed("@@\n-x\n+y\n") + update.finish()))
    assert events[0] == ("op", PatchOpKind.UPDATE, "a.py")
    assert ("-", "x") in events and AddedText("y") in events
    create = V4AParser(headless=(PatchOpKind.ADD, "n.py"))
    assert kinds(joined(create.feed("+one\n+two") + create.finish())) == [
        ("op", PatchOpKind.ADD, "n.py"), AddedText("one"), AddedText("\n"), AddedText("two"), AddedText("\n"),
        OperationClosed(),
    ]
    delete = V4AParser(headless=(PatchOpKind.DELETE, "gone.py"))
    assert kinds(delete.finish()) == [("op", PatchOpKind.DELETE, "gone.py"), OperationClosed()]


def test_a_line_the_format_does_not_allow_breaks_its_operation_and_the_next_one_reads() -> None:
    events = kinds(parse("*** Begin Patch\n*** Update File: a\n@@\n x\noops\n y\n*** Delete File: b\n*** End Patch"))
    broken = [e for e in events if isinstance(e, tuple) and e[0] == "broken"]
    message = "patch line 5: 'oops': each line of a hunk starts with ' ', '-' or '+' (or is an '@@' line)"
    assert broken == [("broken", message)]
    assert (" ", "y") not in events  # skipped with the rest of the operation
    assert ("op", PatchOpKind.DELETE, "b") in events
    assert kinds(parse("Here is my patch:\n")) == [
        ("broken", "patch line 1: the patch must start with '*** Begin Patch', not 'Here is my patch:'")
    ]
    assert kinds(parse("*** Begin Patch\n*** Add File: n\n+a\nb\n*** End Patch\n"))[-1] == (
        "broken", "patch line 4: 'b': each line of an added file starts with '+'"
    )


def test_what_follows_the_end_of_the_patch_is_ignored() -> None:
    events = kinds(parse("*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n"))
    assert events == [("op", PatchOpKind.DELETE, "a"), OperationClosed()]
